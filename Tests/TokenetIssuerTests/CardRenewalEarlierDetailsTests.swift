import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// Card data taken before a renewal (a digitization the TSP resumed after a crash, a push session or receipt made
/// before it), and a second answer about a token the issuer had approved.
extension CardCareTests {
    func authorize(
        _ decisions: IssuerV1.IssuerDecisions.Client, _ pan: String, _ expiry: String
    ) async throws -> IssuerV1.AuthorizeDigitizationResponse {
        var request = IssuerV1.AuthorizeDigitizationRequest()
        // Pushed by the issuer's app, which needs no security code: the code a renewal gives is not the point here.
        request.encryptedCardData = try Support.encrypted(pan, expiry: expiry, to: try Support.issuerKey())
        request.inputMethod = .bankApp
        request.digitalCardID = "DNITHE9"
        request.walletAccountID = "wallet-account-1"
        return try await decisions.authorizeDigitization(request)
    }

    /// They were declined as "the expiry date does not match the issuer's records", which blamed the cardholder's
    /// typing for the issuer's own renewal.
    @Test func cardDataFromBeforeARenewalIsNamedAsSuch() async throws {
        let decisions = IssuerV1.IssuerDecisions.Client(Support.connect(Support.router(party), as: .tsp))
        let (_, pan, expiry) = Cards.visaApprove
        _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, expiry: "12/32"))

        // Nothing of the renewed card is told: whoever holds the earlier details learns only that it was renewed.
        let newExpiry =
            "the card ending 0009 was renewed after these card details were taken; add the card again with the "
            + "details of the renewed card"
        let old = try await authorize(decisions, pan, expiry)
        #expect(old.decision == .declined)
        #expect(old.reason == newExpiry)
        let eligibility = try await decisions.checkCardEligibility(
            .init(encryptedCardData: try Support.encrypted(pan, expiry: expiry, to: try Support.issuerKey())))
        #expect(eligibility == .init(eligible: false, reason: newExpiry))
        // An expiry the card never had is still a mistake in the card data.
        let typo = try await authorize(decisions, pan, "01/33")
        #expect(typo.reason == "the expiry date does not match the issuer's records for the card ending 0009")
        #expect(try await authorize(decisions, pan, "12/32").decision == .approved)

        _ = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        let oldNumber = try await authorize(decisions, pan, "12/32")
        #expect(
            oldNumber.reason
                == "the card ending 0009 was renewed after these card details were taken; add the card again with "
                + "the details of the renewed card")
        // The old number with an expiry it never had is no card's earlier details.
        for wrong in ["11/28", "01/33"] {
            let guessed = try await authorize(decisions, pan, wrong)
            #expect(guessed.decision == .declined)
            #expect(guessed.reason == "the issuer has no card ending 0009", "\(wrong)")
        }
        #expect(try await authorize(decisions, "4761000010000017", "12/32").decision == .approved)
        #expect(!sink.lines.joined().contains(pan))
    }

    /// The TSP asks again about a token whose digitization it resumed after a crash, and records the second answer:
    /// a token approved first and declined then was still counted live, and card-wide changes failed on it.
    @Test func aTokenTheIssuerDeclinedAfterApprovingItIsNotLive() throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE2", outcome: .approved)
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .declined(reason: "renewed"))
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).live == ["DNITHE2"])
        #expect(try party.store.digitalCardIDs(ofCard: Cards.visaApprove.0) == ["DNITHE2"])
        // And the other way round: declined, then approved on the retry.
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE3", outcome: .declined(reason: "not yet"))
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE3", outcome: .approved)
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).live == ["DNITHE2", "DNITHE3"])
    }
}
