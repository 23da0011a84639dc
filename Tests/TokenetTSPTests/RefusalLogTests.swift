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
        await expectRPCError(.notFound, "holds no token") {
            try await tsp.wallet.getTokenIssuer(
                .init(digitalCardID: "DNITHE000000000000000099", walletAccountID: TSPHarness.account))
        }
        let refused = tsp.logs.lines.filter { $0.contains("GetTokenIssuer refused") }
        #expect(refused.count == (level == .debug ? 1 : 0), "\(tsp.logs.lines)")
    }
}
