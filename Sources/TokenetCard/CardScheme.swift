/// The payment scheme a card number belongs to, decided by its leading digits (the BIN).
public enum CardScheme: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case visa
    case mastercard
    /// Any other scheme (Amex, Discover, …): such cards are not eligible for tokenization here.
    case other

    /// The scheme of a card number (or of a BIN prefix of at least four digits).
    ///
    /// Visa is `4…`; Mastercard is `51`–`55` and the 2-series `2221`–`2720`. Everything else is `.other`.
    public init(bin digits: some StringProtocol) {
        let bytes = Array(digits.utf8.prefix(4))
        guard bytes.allSatisfy({ (48...57).contains($0) }), let first = bytes.first else {
            self = .other
            return
        }
        if first == UInt8(ascii: "4") {
            self = .visa
            return
        }
        if bytes.count >= 2 {
            let two = Int(bytes[0] - 48) * 10 + Int(bytes[1] - 48)
            if (51...55).contains(two) {
                self = .mastercard
                return
            }
        }
        if bytes.count == 4 {
            let four = bytes.reduce(0) { $0 * 10 + Int($1 - 48) }
            if (2221...2720).contains(four) {
                self = .mastercard
                return
            }
        }
        self = .other
    }

    /// True for the schemes this service can tokenize.
    public var isEligible: Bool { self != .other }

    public var description: String {
        switch self {
        case .visa: return "Visa"
        case .mastercard: return "Mastercard"
        case .other: return "other"
        }
    }
}
