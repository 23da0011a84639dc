import Foundation
import TokenetCard
import TokenetWire

/// The TSP's own eligibility checks, as a pure function of the decrypted card and what storage knows, in the order
/// the cardholder should hear about them: the number, the scheme, the expiry, the issuer's participation, and
/// whether the card is already in this wallet on this device. The issuer's own answer comes after these.
enum EligibilityRules {
    struct Ineligible: Sendable, Equatable, Error {
        let reason: TspV1.IneligibilityReason
        let message: String
    }

    struct Eligible: Sendable {
        let pan: PAN
        let scheme: CardScheme
        let expiry: CardExpiry
        let issuer: IssuerRecord
    }

    static func evaluate(
        _ card: CardData,
        asOf date: Date,
        issuerFor: (PAN) -> IssuerRecord?,
        isAlreadyProvisioned: (PAN) throws -> Bool
    ) rethrows -> Result<Eligible, Ineligible> {
        switch CardEligibility.evaluate(card, asOf: date) {
        case .ineligible(let rejection):
            return .failure(Ineligible(reason: reason(for: rejection), message: rejection.message))
        case .eligible(let pan, let scheme, let expiry):
            guard let issuer = issuerFor(pan) else {
                return .failure(
                    Ineligible(
                        reason: .issuerNotParticipating,
                        message: "the bank that issued this \(scheme) card does not offer it for digital wallets yet"
                    ))
            }
            guard try !isAlreadyProvisioned(pan) else {
                return .failure(
                    Ineligible(
                        reason: .alreadyProvisioned,
                        message: "this card ending in \(pan.last4) is already in this wallet on this device"))
            }
            return .success(Eligible(pan: pan, scheme: scheme, expiry: expiry, issuer: issuer))
        }
    }

    static func reason(for rejection: CardRejection) -> TspV1.IneligibilityReason {
        switch rejection {
        case .nonDigitCharacters, .invalidLength, .luhnCheckFailed: .invalidCardNumber
        case .unsupportedScheme: .unsupportedScheme
        case .malformedExpiry, .malformedExpirationDate, .invalidExpiryMonth: .invalidExpiry
        case .expired: .cardExpired
        }
    }
}

extension CardScheme {
    var wire: CardV1.CardScheme {
        switch self {
        case .visa: .visa
        case .mastercard: .mastercard
        case .other: .unspecified
        }
    }
}
