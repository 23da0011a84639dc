/// A validated primary account number (card number): 13 to 19 ASCII digits with a correct Luhn check digit.
///
/// `description`, `debugDescription` and the reflection mirror show only the masked form, so `"\(pan)"` in a log
/// line, `print(pan)` or `dump(pan)` cannot leak the number. Code that needs the number itself (encryption,
/// storage) reads `digits` explicitly.
public struct PAN: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The full card number. Never log it; use `masked` or `last4`.
    public let digits: String

    public static let validLengths = 13...19

    /// Validates `number`; throws `CardError` with code `.invalidCard` and the failed check as its rejection.
    public init(_ number: String) throws(CardError) {
        if let rejection = Self.rejection(for: number) { throw CardError(rejection: rejection) }
        self.digits = number
    }

    /// For numbers built to be valid (token generation); checked in debug builds.
    init(unchecked digits: String) {
        assert(Self.rejection(for: digits) == nil)
        self.digits = digits
    }

    /// The first failed check for `number`, or nil when it is a valid card number.
    public static func rejection(for number: String) -> CardRejection? {
        guard number.utf8.allSatisfy({ (48...57).contains($0) }) else { return .nonDigitCharacters }
        guard validLengths.contains(number.utf8.count) else { return .invalidLength(number.utf8.count) }
        guard Luhn.isValid(number) else { return .luhnCheckFailed }
        return nil
    }

    public var scheme: CardScheme { CardScheme(bin: digits) }

    public var length: Int { digits.utf8.count }

    /// The last four digits, the only part that may be shown to people or written to logs.
    public var last4: String { String(digits.suffix(4)) }

    /// Every digit but the last four replaced by `*`, for example `************1111`.
    public var masked: String { String(repeating: "*", count: length - 4) + last4 }

    public var description: String { masked }

    public var debugDescription: String { "PAN(\(masked))" }

    public var customMirror: Mirror { Mirror(self, children: ["masked": masked], displayStyle: .struct) }
}
