/// The issuer's demo data: who it is, its BIN ranges, cardholders, accounts and cards, and how it answers
/// digitizations of each card. Read from the `--fixtures` JSON file; see Tools/fixtures/issuer.json.
public struct IssuerFixture: Codable, Sendable, Equatable {
    public struct Issuer: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var binRanges: [BINRange]
        /// Shown for the CALL_CENTER ID&V method.
        public var callCenterNumber: String?
    }

    /// Inclusive prefixes of equal length, such as "476100" to "476199".
    public struct BINRange: Codable, Sendable, Equatable {
        public var low: String
        public var high: String

        /// Whether `digits` starts with a prefix inside the range.
        public func contains(_ digits: String) -> Bool {
            let prefix = String(digits.prefix(low.count))
            return prefix.count == low.count && prefix >= low && prefix <= high
        }

        /// Whether some card number lies in both ranges. Ranges of different lengths are compared as the spans
        /// of longer prefixes they cover ("4761" to "4761" covers "476100" to "476199").
        func overlaps(_ other: BINRange) -> Bool {
            let length = max(low.count, other.low.count)
            func padded(_ text: String, _ digit: Character) -> String {
                text + String(repeating: digit, count: length - text.count)
            }
            return padded(low, "0") <= padded(other.high, "9") && padded(other.low, "0") <= padded(high, "9")
        }
    }

    public struct Cardholder: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var phone: String
        public var email: String
    }

    public struct Account: Codable, Sendable, Equatable {
        public var id: String
        public var cardholderId: String
    }

    public struct Card: Codable, Sendable, Equatable {
        public var id: String
        public var accountId: String
        /// The card number. It lives in the fixture file and, encrypted, in the database; never in a log.
        public var pan: String
        /// `MM/YY`, as printed on the card.
        public var expiry: String
        public var cvc: String
        public var cardholderName: String
        /// When present, the issuer answers eligibility checks for this card with "not eligible" and this reason.
        public var notEligibleReason: String?
        public var digitization: DigitizationRule
    }

    public var issuer: Issuer
    public var cardholders: [Cardholder]
    public var accounts: [Account]
    public var cards: [Card]
}
