import Foundation
import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A renewal cannot give a card a second live token in one wallet account on one device.
@Suite struct SameCardRenewalTests {
    /// Two Visa cards of the issuer live on one phone: renewing the second card's token to the first card's number
    /// is refused in that token's result, naming the first card's token; the token keeps its card and nothing is
    /// announced for it.
    @Test func aTokenIsNotRenewedToACardLiveOnItsDevice() async throws {
        let tsp = try TSPHarness.make()
        let first = try await LifecycleTests.activeToken(tsp)
        let eligibility = try await tsp.checkEligibility(pan: "4111111111111129")
        try #require(eligibility.eligible)
        let second = try await tsp.digitize(eligibility)
        try #require(second.tokenState == .active, "\(second)")
        let response = try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1).renewCard(
            .init(
                digitalCardIds: [second.digitalCardID],
                cardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))))
        #expect(response.renewedDigitalCardIds.isEmpty)
        let result = try #require(response.results.first)
        #expect(result.statusCode == StatusCode.failedPrecondition.rawValue && result.tokenState == .active)
        #expect(result.message.contains("already live in this wallet on this device as token \"\(first)\""))
        let tokens = try await tsp.control.listTokens(.init()).tokens
        #expect(tokens.first { $0.digitalCardID == second.digitalCardID }?.panLast4 == "1129")
        #expect(tsp.published.of("CARD_RENEWAL").isEmpty)
    }
}
