import Foundation

/// Whether a funding card can be tokenized: a valid number of a supported scheme whose expiry has not passed.
///
/// The checks run in a fixed order (number format, length, Luhn, scheme, expiry format, month, expiry date) and the
/// first failure is reported, so the person provisioning the card is told exactly what to fix.
public enum CardEligibility: Sendable, Equatable {
    case eligible(PAN, CardScheme, CardExpiry)
    case ineligible(CardRejection)

    /// Evaluates a card number and an `MM/YY` expiry against the moment `date`.
    public static func evaluate(accountNumber: String, expiry: String, asOf date: Date) -> CardEligibility {
        evaluate(
            pan: { () throws(CardError) in try PAN(accountNumber) },
            expiry: { () throws(CardError) in
                try CardExpiry(parsing: expiry)
            }, asOf: date)
    }

    /// Evaluates decrypted card data (its `expirationDate` month and four-digit year) against the moment `date`.
    public static func evaluate(_ card: CardData, asOf date: Date) -> CardEligibility {
        evaluate(
            pan: { () throws(CardError) in try card.pan() },
            expiry: { () throws(CardError) in
                try card.expiry()
            }, asOf: date)
    }

    /// The rejection, or nil when eligible.
    public var rejection: CardRejection? {
        if case .ineligible(let rejection) = self { return rejection }
        return nil
    }

    private static func evaluate(
        pan makePAN: () throws(CardError) -> PAN,
        expiry makeExpiry: () throws(CardError) -> CardExpiry,
        asOf date: Date
    ) -> CardEligibility {
        let pan: PAN
        do { pan = try makePAN() } catch { return .ineligible(error.rejection ?? .nonDigitCharacters) }
        guard pan.scheme.isEligible else { return .ineligible(.unsupportedScheme) }
        let expiry: CardExpiry
        do { expiry = try makeExpiry() } catch { return .ineligible(error.rejection ?? .malformedExpiry) }
        guard !expiry.hasPassed(asOf: date) else { return .ineligible(.expired(expiry)) }
        return .eligible(pan, pan.scheme, expiry)
    }
}
