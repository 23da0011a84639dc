import Foundation
import TokenetCard

/// The issuer's own eligibility answer for presented card data against its records.
enum IssuerEligibility {
    /// `renewed` is the card as it is now when the presented number and expiry are its details from before a
    /// renewal (`IssuerStore.renewedCard(describedBefore:expiry:current:)`).
    static func evaluate(
        presented card: CardData, stored: StoredCard?, renewed: StoredCard? = nil, asOf date: Date
    ) -> (Bool, String) {
        let last4 = String(card.accountNumber.suffix(4))
        if let renewed {
            // Nothing of the renewed card, not even whether its number stayed: this answer reaches whoever presented
            // the earlier details (any wallet, through the TSP), and its new number and expiry told someone holding
            // an old card how to use the new.
            _ = renewed
            return (
                false,
                "the card ending \(last4) was renewed after these card details were taken; add the card again with "
                    + "the details of the renewed card"
            )
        }
        guard let stored else { return (false, "the issuer has no card ending \(last4)") }
        // Before its details are compared: a blocked card (lost, stolen) answers the same whatever is presented.
        if let blocked = stored.blockedRefusal { return (false, blocked) }
        guard let expiry = try? card.expiry(), expiry == stored.expiry else {
            return (false, "the expiry date does not match the issuer's records for the card ending \(last4)")
        }
        if securityCodeMatches(card, stored) == false {
            return (false, "the security code does not match the issuer's records for the card ending \(last4)")
        }
        if let reason = stored.notEligibleReason { return (false, reason) }
        if expiry.hasPassed(asOf: date) { return (false, "the card ending \(last4) expired in \(expiry)") }
        return (true, "")
    }

    /// Whether the presented security code is the card's (compared in constant time), or nil when none came.
    static func securityCodeMatches(_ card: CardData, _ stored: StoredCard) -> Bool? {
        guard let cvv2 = card.cvv2, !cvv2.isEmpty else { return nil }
        return HMAC.constantTimeEquals(Array(cvv2.utf8), Array(stored.cvc.utf8))
    }

    /// `evaluate`, with the card's wrong security codes and expiry dates counted in `attempts` (a code only when
    /// given with the right expiry: with another, the answer names the expiry) and the card refused once they pass
    /// the limit (`SecurityCodeAttempts`).
    static func evaluate(
        presented card: CardData, stored: StoredCard?, renewed: StoredCard?, asOf date: Date,
        attempts: SecurityCodeAttempts
    ) -> (Bool, String) {
        if let stored, renewed == nil {
            if let until = attempts.lockedUntil(stored.id, asOf: date) {
                return (
                    false,
                    "too many wrong security codes or expiry dates for the card ending "
                        + "\(String(card.accountNumber.suffix(4))) (\(SecurityCodeAttempts.limit) within 24 hours): the "
                        + "issuer refuses it until \(until.formatted(Date.ISO8601FormatStyle())); the issuer's app can still "
                        + "push it to the wallet"
                )
            }
            // A wrong expiry counts as a wrong code does: uncounted, a card number alone was completed by trying
            // every expiry (each answer names a wrong one), then digitized without a code. A right code, given with
            // the right expiry, forgets the count; the right expiry alone does not, or an attacker trying codes
            // could clear the count between tries by sending none.
            if (try? card.expiry()) != stored.expiry {
                attempts.record(stored.id, wrong: true, at: date)
            } else if let matches = securityCodeMatches(card, stored) {
                attempts.record(stored.id, wrong: !matches, at: date)
            }
        }
        return evaluate(presented: card, stored: stored, renewed: renewed, asOf: date)
    }
}
