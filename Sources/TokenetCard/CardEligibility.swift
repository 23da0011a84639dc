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
        let pan: PAN
        do { pan = try PAN(accountNumber) } catch { return .ineligible(error.rejection ?? .nonDigitCharacters) }
        guard pan.scheme.isEligible else { return .ineligible(.unsupportedScheme) }
        let parsed: CardExpiry
        do { parsed = try CardExpiry(parsing: expiry) } catch {
            return .ineligible(error.rejection ?? .malformedExpiry)
        }
        guard !parsed.hasPassed(asOf: date) else { return .ineligible(.expired(parsed)) }
        return .eligible(pan, pan.scheme, parsed)
    }

    /// The rejection, or nil when eligible.
    public var rejection: CardRejection? {
        if case .ineligible(let rejection) = self { return rejection }
        return nil
    }
}
