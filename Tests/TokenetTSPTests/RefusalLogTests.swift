import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A refusal reaches the node's log once: the runtime's call log writes it at info as "call failed", with the
/// method, the peer, the status and the message; the TSP's own "refused" line is for debug.
@Suite struct RefusalLogTests {
    @Test(arguments: [LogLevel.info, .debug])
    func aRefusalIsLoggedByTheTSPOnlyAtDebug(level: LogLevel) async throws {
        let tsp = try TSPHarness.make(logLevel: level)
        try await tsp.registerIssuer()
        await expectRPCError(.invalidArgument, "is not an input method") {
            try await tsp.wallet.checkEligibility(
                TspV1.CheckEligibilityRequest(
                    requestID: UUID().uuidString,
                    eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .init(rawValue: 999)),
                    walletAccountID: TSPHarness.account, device: TSPHarness.device,
                    instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)))))
        }
        let refused = tsp.logs.lines.filter { $0.contains("CheckEligibility refused") }
        #expect(refused.count == (level == .debug ? 1 : 0), "\(tsp.logs.lines)")
    }
}
