import Foundation
import Testing
import TokenetCard
import TokenetWire

@testable import TokenetIssuer

@Suite struct DigitizationPolicyTests {
    let contact = CardholderContact(phone: "+1 415 555 0101", email: "alice@example.com", callCenterNumber: "+1 800")
    let sms = IdvMethodSpec(type: .otpSMS)
    let app = IdvMethodSpec(
        type: .appToApp, appIdentifier: "com.bank", appAction: "com.bank.ACTIVATE", appName: "Bank app")

    func decide(_ rule: DigitizationRule, _ account: Int, _ device: Int) -> DigitizationOutcome {
        DigitizationPolicy.decide(rule, risk: RiskScores(account: account, device: device), contact: contact)
    }

    @Test func approveAndDeclineIgnoreScores() {
        #expect(decide(.approve, 5, 5) == .approved)
        #expect(decide(.decline(reason: "fraud review"), 1, 1) == .declined(reason: "fraud review"))
    }

    @Test func stepUpOffersMaskedDestinations() {
        let outcome = decide(
            .stepUp(idv: [sms, IdvMethodSpec(type: .otpEmail), app, IdvMethodSpec(type: .callCenter)]), 1, 1)
        #expect(
            outcome
                == .stepUp([
                    IdvOffer(id: "otp-sms", type: .otpSMS, maskedValue: "***-***-0101"),
                    IdvOffer(id: "otp-email", type: .otpEmail, maskedValue: "a***@example.com"),
                    IdvOffer(
                        id: "app-to-app", type: .appToApp, maskedValue: "Bank app", appIdentifier: "com.bank",
                        appAction: "com.bank.ACTIVATE"),
                    IdvOffer(id: "call-center", type: .callCenter, maskedValue: "+1 800"),
                ]))
    }

    @Test func byScoreUsesTheWorseScore() {
        let rule = DigitizationRule.byScore(approveAtMost: 2, stepUpAtMost: 4, idv: [sms], declineReason: nil)
        let stepUp = DigitizationOutcome.stepUp([IdvOffer(id: "otp-sms", type: .otpSMS, maskedValue: "***-***-0101")])
        #expect(decide(rule, 1, 1) == .approved)
        #expect(decide(rule, 2, 2) == .approved)
        #expect(decide(rule, 1, 3) == stepUp)
        #expect(decide(rule, 4, 2) == stepUp)
        #expect(decide(rule, 5, 1) == .declined(reason: DigitizationPolicy.defaultScoreDeclineReason))
        #expect(decide(rule, 1, 5) == .declined(reason: DigitizationPolicy.defaultScoreDeclineReason))
        // No scores from the TSP: not approved blindly, not declined either.
        #expect(decide(rule, 0, 0) == stepUp)
        #expect(decide(rule, 1, 9) == stepUp)
        let custom = DigitizationRule.byScore(approveAtMost: 1, stepUpAtMost: 1, idv: [sms], declineReason: "too risky")
        #expect(decide(custom, 2, 1) == .declined(reason: "too risky"))
    }

    /// The wallet's recommendation weighs in a by-score rule: DECLINE declines whatever the scores, and
    /// REQUIRE_AUTHENTICATION steps up a card the scores would approve; a fixed rule (approve, decline, step-up)
    /// stands as written.
    @Test func byScoreWeighsTheWalletsRecommendation() {
        let rule = DigitizationRule.byScore(approveAtMost: 2, stepUpAtMost: 4, idv: [sms], declineReason: nil)
        let stepUp = DigitizationOutcome.stepUp([IdvOffer(id: "otp-sms", type: .otpSMS, maskedValue: "***-***-0101")])
        func decide(_ rule: DigitizationRule, _ recommendation: CardV1.WalletRecommendation) -> DigitizationOutcome {
            DigitizationPolicy.decide(
                rule, risk: RiskScores(account: 1, device: 1, recommendation: recommendation), contact: contact)
        }
        #expect(decide(rule, .approve) == .approved)
        #expect(decide(rule, .unspecified) == .approved)
        #expect(decide(rule, .requireAuthentication) == stepUp)
        #expect(decide(rule, .decline) == .declined(reason: DigitizationPolicy.recommendedDeclineReason))
        #expect(decide(.approve, .decline) == .approved)
    }

    /// A card whose suspension by the issuer or the TSP stands in the wallet account (the wallet deleted the
    /// suspended token and added the card again) is never approved outright: an approval becomes a step-up, with
    /// the rule's methods when it has some, else codes to the cardholder's phone and e-mail.
    @Test func aHeldSuspensionTurnsAnApprovalIntoAStepUp() {
        func held(_ rule: DigitizationRule, _ account: Int = 1, _ device: Int = 1, contact: CardholderContact? = nil)
            -> DigitizationOutcome
        {
            DigitizationPolicy.decide(
                rule, risk: RiskScores(account: account, device: device), contact: contact ?? self.contact,
                hold: .heldSuspension)
        }
        let smsOffer = IdvOffer(id: "otp-sms", type: .otpSMS, maskedValue: "***-***-0101")
        let smsAndEmail = DigitizationOutcome.stepUp([
            smsOffer, IdvOffer(id: "otp-email", type: .otpEmail, maskedValue: "a***@example.com"),
        ])
        #expect(held(.approve) == smsAndEmail)
        let byScore = DigitizationRule.byScore(approveAtMost: 2, stepUpAtMost: 4, idv: [app], declineReason: nil)
        #expect(held(byScore) == decide(byScore, 3, 3))
        #expect(held(byScore, 5, 5) == .declined(reason: DigitizationPolicy.defaultScoreDeclineReason))
        #expect(held(.stepUp(idv: [sms])) == decide(.stepUp(idv: [sms]), 1, 1))
        #expect(held(.decline(reason: "closed")) == .declined(reason: "closed"))
        let phoneOnly = CardholderContact(phone: "+1 415 555 0101", email: "", callCenterNumber: nil)
        #expect(held(.approve, contact: phoneOnly) == .stepUp([smsOffer]))
        let unreachable = CardholderContact(phone: "", email: "", callCenterNumber: nil)
        #expect(
            held(.approve, contact: unreachable)
                == .declined(reason: DigitizationPolicy.heldSuspensionDeclineReason))
    }

    @Test func masking() {
        #expect(Masking.phone("+44 20 7946 0102") == "***-***-0102")
        #expect(Masking.email("bob.okafor@example.org") == "b***@example.org")
        #expect(Masking.email("no-at-sign") == nil)
    }

    @Test func eligibilityAgainstRecords() throws {
        let store = try Support.store()
        let (_, number, expiry) = Cards.visaApprove
        let stored = try store.card(matching: try PAN(number))
        func card(_ number: String, _ expiry: String, cvv2: String? = nil) throws -> CardData {
            CardData(pan: try PAN(number), expiry: try CardExpiry(parsing: expiry), cvv2: cvv2)
        }
        let now = Support.now
        #expect(
            IssuerEligibility.evaluate(presented: try card(number, expiry), stored: stored, asOf: now) == (true, ""))
        #expect(
            IssuerEligibility.evaluate(presented: try card(number, expiry, cvv2: "123"), stored: stored, asOf: now)
                == (true, ""))
        #expect(
            IssuerEligibility.evaluate(presented: try card(number, expiry, cvv2: "999"), stored: stored, asOf: now)
                == (false, "the security code does not match the issuer's records for the card ending 0009"))
        #expect(
            IssuerEligibility.evaluate(presented: try card(number, "11/29"), stored: stored, asOf: now)
                == (false, "the expiry date does not match the issuer's records for the card ending 0009"))
        #expect(
            IssuerEligibility.evaluate(presented: try card(number, expiry), stored: nil, asOf: now)
                == (false, "the issuer has no card ending 0009"))
        let later = Date(timeIntervalSince1970: 1_900_000_000)
        #expect(IssuerEligibility.evaluate(presented: try card(number, expiry), stored: stored, asOf: later).0 == false)
    }

    /// Past five wrong security codes within a day, a card is refused whatever code comes, so that its code cannot be
    /// found by trying them all (the answer names a wrong code); a right code before that forgets the count.
    @Test func wrongSecurityCodesLockTheCard() throws {
        let store = try Support.store()
        let (_, number, expiry) = Cards.visaApprove
        let stored = try store.card(matching: try PAN(number))
        func check(_ cvv2: String, at date: Date, _ attempts: SecurityCodeAttempts) throws -> (Bool, String) {
            let card = CardData(pan: try PAN(number), expiry: try CardExpiry(parsing: expiry), cvv2: cvv2)
            return IssuerEligibility.evaluate(
                presented: card, stored: stored, renewed: nil, asOf: date, attempts: attempts)
        }
        let now = Support.now
        let attempts = SecurityCodeAttempts()
        for wrong in ["111", "222", "333", "444"] { #expect(try check(wrong, at: now, attempts).0 == false) }
        // A right code forgets the four wrong ones.
        #expect(try check("123", at: now, attempts) == (true, ""))
        for wrong in ["111", "222", "333", "444", "555"] {
            #expect(try check(wrong, at: now, attempts).1.contains("security code does not match"))
        }
        let locked = try check("123", at: now.addingTimeInterval(60), attempts)
        #expect(locked.0 == false)
        #expect(
            locked.1.hasPrefix(
                "too many wrong security codes or expiry dates for the card ending 0009 (5 within 24 hours): the "
                    + "issuer refuses it until "), "\(locked.1)")
        // A day after the last wrong code the card is the cardholder's again.
        #expect(try check("123", at: now.addingTimeInterval(24 * 3600 + 1), attempts) == (true, ""))
    }

    /// Wrong expiries count as wrong codes do: uncounted, a card number alone was completed by trying every expiry
    /// (the answer names a wrong one), and then digitized without a code. The right expiry without a code forgets
    /// nothing, or sending none between tries would clear the count of wrong codes.
    @Test func wrongExpiriesCountTowardTheLock() throws {
        let store = try Support.store()
        let (_, number, expiry) = Cards.visaApprove
        let stored = try store.card(matching: try PAN(number))
        let attempts = SecurityCodeAttempts()
        func check(_ expiry: String, _ cvv2: String? = nil) throws -> (Bool, String) {
            let card = CardData(pan: try PAN(number), expiry: try CardExpiry(parsing: expiry), cvv2: cvv2)
            return IssuerEligibility.evaluate(
                presented: card, stored: stored, renewed: nil, asOf: Support.now, attempts: attempts)
        }
        for wrong in ["01/27", "06/28", "11/29"] {
            #expect(try check(wrong).1.contains("the expiry date does not match"))
        }
        // The right expiry alone is eligible, and forgets none of the wrong ones.
        #expect(try check(expiry) == (true, ""))
        #expect(try check("02/27", "999").1.contains("the expiry date does not match"))
        #expect(try check(expiry, "999").1.contains("the security code does not match"))
        let locked = try check(expiry, "123")
        #expect(
            locked.0 == false && locked.1.hasPrefix("too many wrong security codes or expiry dates"), "\(locked.1)")
    }
}
