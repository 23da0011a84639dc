import Foundation
import Testing
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A renewal gives the card's new expiry, which goes to the wallets and the issuer app and replaces the token's
/// funding card's: an impossible one (month 13, year 1999) or a past one was taken, shown as "13/31", and left the
/// token's funding card without an expiry.
@Suite struct RenewalExpiryTests {
    @Test(arguments: [
        ("13", "2031", "is not valid: give two digits for the month (01 to 12) and four for the year"),
        ("00", "1999", "is not valid"),
        ("1", "2031", "is not valid"),
        ("12", "2020", "the renewed card expired at the end of 12/20"),
        // MM/YY everywhere: 2100 came back as 00, an expiry long past.
        ("06", "2100", "is not valid"),
    ])
    func anImpossibleOrPastExpiryIsRefused(month: String, year: String, message: String) async throws {
        let tsp = try TSPHarness.make()
        let token = try await LifecycleTests.activeToken(tsp)
        await expectRPCError(.invalidArgument, message) {
            try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1).renewCard(
                .init(
                    digitalCardIds: [token],
                    cardData: try TSPHarness.encrypted(
                        TSPHarness.card("4111111111111129", month: month, year: year))))
        }
        #expect(tsp.published.of("CARD_RENEWAL").isEmpty)
        let renewed = try await NotificationFlowTests.updates(tsp, as: LifecycleTests.issuer1).renewCard(
            .init(
                digitalCardIds: [token],
                cardData: try TSPHarness.encrypted(TSPHarness.card("4111111111111129", month: "07", year: "2031"))))
        #expect(renewed.renewedDigitalCardIds == [token])
    }
}
