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
        guard let expiry = try? card.expiry(), expiry == stored.expiry else {
            return (false, "the expiry date does not match the issuer's records for the card ending \(last4)")
        }
        if let cvv2 = card.cvv2, !cvv2.isEmpty, cvv2 != stored.cvc {
            return (false, "the security code does not match the issuer's records for the card ending \(last4)")
        }
        if let reason = stored.notEligibleReason { return (false, reason) }
        if expiry.hasPassed(asOf: date) { return (false, "the card ending \(last4) expired in \(expiry)") }
        return (true, "")
    }
}
