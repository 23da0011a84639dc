import Foundation
import Testing
import TokenetRPC
import TokenetTransport
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

    /// A card is renewed into its own issuer's BIN ranges: another issuer's card number, or one in no registered
    /// range, is refused as a whole. Before, it renewed the token, which then paid with another bank's card and kept
    /// that card out of the wallet ("already in this wallet").
    @Test func aRenewalOutsideTheIssuersRangesIsRefused() async throws {
        let tsp = try TSPHarness.make()
        let token = try await LifecycleTests.activeToken(tsp)
        _ = try await TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.issuer2)).registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "422222", high: "422222")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        for pan in ["4222220000000008", "4000056655665556"] {
            await expectRPCError(.invalidArgument, "is outside the BIN ranges this node registered") {
                try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1).renewCard(
                    .init(
                        digitalCardIds: [token], cardData: try TSPHarness.encrypted(TSPHarness.card(pan))))
            }
        }
        let tokens = try await tsp.control.listTokens(.init()).tokens
        #expect(tokens.first { $0.digitalCardID == token }?.panLast4 == "1111")
        #expect(tsp.published.of("CARD_RENEWAL").isEmpty)
        // Bank B's own node renews no token of bank A into its range.
        let refused = try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer2).renewCard(
            .init(digitalCardIds: [token], cardData: try TSPHarness.encrypted(TSPHarness.card("4222220000000008"))))
        #expect(refused.renewedDigitalCardIds.isEmpty)
        #expect(refused.results.first?.statusCode != 0)
    }
}
