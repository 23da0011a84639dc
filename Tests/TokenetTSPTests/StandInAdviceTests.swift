import Foundation
import Testing
import TokenetCard
import TokenetWire

@testable import TokenetTSP

/// The issuer is told of every digitization the stand-in decided for its cards (STAND_IN_ADVICE to its node's
/// queue), and of no other: otherwise a token made while the issuer was down stays unknown to it, and the card's
/// renewals leave it with the old number.
@Suite struct StandInAdviceTests {
    static let issuerQueue = ["issuer/issuer-1"]

    static func advices(_ tsp: TSPHarness) -> [(cardID: String, queues: [String], body: TspV1.StandInAdviceBody?)] {
        tsp.published.of("STAND_IN_ADVICE").map { publish in
            let body: TspV1.StandInAdviceBody? =
                if case .standInAdvice(let advice)? = publish.notification.body { advice } else { nil }
            return (publish.notification.cardID, publish.queues, body)
        }
    }

    /// The stand-in does not approve a card typed in without its security code, which the issuer would step up: with
    /// the issuer away, a card number and expiry alone got a live token.
    @Test func theStandInDeclinesACardGivenWithoutItsSecurityCode() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        var card = TSPHarness.card(TSPHarness.visa)
        card.cvv2 = nil
        let eligibility = try await tsp.checkEligibility(.encryptedCardData(try TSPHarness.encrypted(card)))
        try #require(eligibility.eligible)
        tsp.issuer.set(.unavailable)
        let response = try await tsp.digitize(eligibility, risk: TSPHarness.lowRisk)
        #expect(response.decidedBy == "stand-in" && response.decision == .declined)
        #expect(
            response.declineReason.hasSuffix(
                "and the card was given without its security code (stand-in declined): add it again with its security "
                    + "code"),
            "\(response.declineReason)")
    }

    @Test func aStandInApprovalIsAdvisedToTheIssuerWithItsCardEncryptedToTheIssuersKey() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        tsp.issuer.set(.unavailable)
        let response = try await tsp.digitize(
            eligibility, risk: TSPHarness.lowRisk, tokenRequestorID: "40010075001", tokenType: .hce)
        #expect(response.decidedBy == "stand-in" && response.decision == .approved)

        let advices = Self.advices(tsp)
        try #require(advices.count == 1, "\(tsp.published.publishes)")
        let advice = try #require(advices[0].body)
        #expect(advices[0].cardID == response.digitalCardID)
        #expect(advices[0].queues == Self.issuerQueue)
        #expect(tsp.published.of("STAND_IN_ADVICE")[0].notification.sender == "CPS")
        #expect(advice.decision == .approved)
        #expect(advice.reason.hasPrefix("stand-in approved (the issuer "), "\(advice.reason)")
        #expect(advice.tokenLast4 == response.tokenLast4)
        #expect(advice.maskedPAN == "************1111")
        #expect(advice.walletAccountID == TSPHarness.account)
        #expect(advice.device?.deviceID == TSPHarness.device.deviceID)
        #expect(advice.risk == TSPHarness.lowRisk)
        #expect(advice.tokenRequestorID == "40010075001" && advice.tokenType == .hce)
        #expect(advice.paymentAccountReference == response.paymentAccountReference)
        #expect(PaymentAccountReference.isWellFormed(advice.paymentAccountReference))
        #expect(advice.decidedAtMs == tsp.clock.now.unixMilliseconds)
        let jwe = try #require(advice.encryptedCardData?.jwe)
        let card = try CardData(json: try JWE.decrypt(jwe, with: FakeIssuer.key))
        #expect(card.accountNumber == TSPHarness.visa)
        #expect(!jwe.contains(TSPHarness.visa))
        // The security code the wallet sent goes with it, for the issuer to check (the stand-in cannot): without it,
        // any code got a live token while the issuer was away. Only the issuer's key reads it.
        #expect(card.cvv2 == "123")
    }

    @Test func aStandInDeclineIsAdvisedToo() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        tsp.issuer.set(.unavailable)
        let response = try await tsp.digitize(eligibility, risk: TSPHarness.highRisk)
        #expect(response.decidedBy == "stand-in" && response.decision == .declined)
        let advices = Self.advices(tsp)
        try #require(advices.count == 1)
        #expect(advices[0].body?.decision == .declined)
        #expect(advices[0].body?.reason.contains("above the stand-in approval limit") == true)
        #expect(!advices[0].cardID.isEmpty)
    }

    @Test func theIssuersOwnDecisionsAndARetriedDigitizationAreNotAdvised() async throws {
        let decided = try TSPHarness.make()
        let approved = try await decided.digitize(try await decided.eligibleVisa(), risk: TSPHarness.lowRisk)
        #expect(approved.decidedBy == "issuer")
        #expect(Self.advices(decided).isEmpty)

        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        tsp.issuer.set(.unavailable)
        let requestID = UUID().uuidString
        let first = try await tsp.digitize(eligibility, requestID: requestID, risk: TSPHarness.lowRisk)
        let again = try await tsp.digitize(eligibility, requestID: requestID, risk: TSPHarness.lowRisk)
        #expect(first == again && first.decidedBy == "stand-in")
        #expect(Self.advices(tsp).map(\.cardID) == [first.digitalCardID])
    }
}
