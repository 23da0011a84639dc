import Foundation
import Testing
import TokenetWire

@testable import TokenetTSP

/// Two wallet nodes are two wallets, even when their accounts and devices carry the same names (both on a node's
/// defaults): the one-live-token rule and the replacement of a step-up left waiting hold within one wallet.
@Suite struct SameCardWalletsTests {
    static func digitize(
        _ tsp: TSPHarness, through wallet: TspV1.Provisioning.Client
    ) async throws -> TspV1.DigitizeResponse {
        let eligibility = try await wallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: UUID().uuidString,
                eligibilityData: TspV1.EligibilityData(language: "en-US", inputMethod: .manual),
                walletAccountID: TSPHarness.account, device: TSPHarness.device,
                instrument: .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa)))))
        try #require(eligibility.eligible, "\(eligibility)")
        var request = TspV1.DigitizeRequest(
            requestID: UUID().uuidString, eligibilityReceipt: eligibility.eligibilityReceipt,
            device: TSPHarness.device, walletAccountID: TSPHarness.account, risk: TSPHarness.lowRisk)
        if case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = tsp.clock.now.unixMilliseconds
        }
        return try await wallet.digitize(request)
    }

    /// The second wallet's card was refused as "already in this wallet on this device".
    @Test func aCardLiveInOneWalletIsEligibleInAnother() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let first = try await Self.digitize(tsp, through: tsp.wallet)
        #expect(first.tokenState == .active)
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let second = try await Self.digitize(tsp, through: other)
        #expect(second.tokenState == .active)
        let states = try await tsp.control.listTokens(.init()).tokens.map { ($0.digitalCardID, $0.state) }
        #expect(states.count == 2 && states.allSatisfy { $0.1 == .active }, "\(states)")
        // Within one wallet the rule stands.
        let again = try await tsp.checkEligibility(pan: TSPHarness.visa)
        #expect(!again.eligible)
    }

    /// One wallet's new digitization deactivated the other wallet's token waiting for its step-up.
    @Test func aStepUpLeftWaitingInOneWalletIsNotReplacedByAnother() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        tsp.issuer.set(.stepUpAll)
        let waiting = try await Self.digitize(tsp, through: tsp.wallet)
        try #require(waiting.tokenState == .inactive)
        let other = TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.wallet2))
        let second = try await Self.digitize(tsp, through: other)
        #expect(second.tokenState == .inactive)
        let first = try #require(
            try await tsp.control.listTokens(.init()).tokens.first { $0.digitalCardID == waiting.digitalCardID })
        #expect(first.state == .inactive)
        // Added again in the same wallet, it is replaced as before.
        let third = try await Self.digitize(tsp, through: tsp.wallet)
        let tokens = try await tsp.control.listTokens(.init()).tokens
        #expect(tokens.first { $0.digitalCardID == waiting.digitalCardID }?.state == .deactivated)
        #expect(tokens.first { $0.digitalCardID == second.digitalCardID }?.state == .inactive)
        #expect(tokens.first { $0.digitalCardID == third.digitalCardID }?.state == .inactive)
    }
}
