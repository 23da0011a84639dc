/// The identifier a scheme gives a token (the "digital card"), used by wallets and issuers to refer to it
/// without the token PAN.
///
/// Formats used here:
/// - Visa `tokenReferenceID`: `DNITHE` followed by 26 decimal digits (32 characters).
/// - Mastercard `tokenUniqueReference`: `DWSPMC` followed by 32 lowercase hexadecimal digits, i.e. 128 random bits
///   (38 characters).
public struct DigitalCardID: Sendable, Hashable, Codable, CustomStringConvertible {
    public static let visaPrefix = "DNITHE"
    public static let mastercardPrefix = "DWSPMC"
    static let visaDigits = 26
    static let mastercardHexDigits = 32

    public let rawValue: String

    /// Accepts only identifiers in one of the two formats above.
    public init?(rawValue: String) {
        guard Self.scheme(of: rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }

    private init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = DigitalCardID(rawValue: text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not a digital card id")
            )
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The scheme whose format the identifier has.
    public var scheme: CardScheme { Self.scheme(of: rawValue)! }

    public var description: String { rawValue }

    /// A new random identifier in the format of `scheme`; nil for `.other`.
    public static func generate(for scheme: CardScheme) -> DigitalCardID? {
        var random = SystemRandomNumberGenerator()
        return generate(for: scheme, using: &random)
    }

    public static func generate(for scheme: CardScheme, using random: inout some RandomNumberGenerator)
        -> DigitalCardID?
    {
        switch scheme {
        case .visa:
            let digits = (0..<visaDigits).map { _ in String(random.next(upperBound: 10 as UInt8)) }
            return DigitalCardID(unchecked: visaPrefix + digits.joined())
        case .mastercard:
            // Drawn again while 13 decimal digits follow each other (about one id in 55): logs and messages mask
            // such a run as a card number when it passes the Luhn check, and the id, partly masked, named nothing.
            while true {
                let hex = (0..<mastercardHexDigits).map { _ in
                    String(random.next(upperBound: 16 as UInt8), radix: 16)
                }.joined()
                guard longestDigitRun(hex) >= maskedDigitRun else {
                    return DigitalCardID(unchecked: mastercardPrefix + hex)
                }
            }
        case .other:
            return nil
        }
    }

    /// The shortest run of decimal digits that masking takes for a card number (`maskPAN`: 13 to 19 digits).
    static let maskedDigitRun = 13

    /// The most decimal digits that follow each other in `text`.
    static func longestDigitRun(_ text: String) -> Int {
        var longest = 0
        var run = 0
        for byte in text.utf8 {
            run = (48...57).contains(byte) ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    private static func scheme(of text: String) -> CardScheme? {
        if text.hasPrefix(visaPrefix) {
            let rest = text.utf8.dropFirst(visaPrefix.utf8.count)
            return rest.count == visaDigits && rest.allSatisfy({ (48...57).contains($0) }) ? .visa : nil
        }
        if text.hasPrefix(mastercardPrefix) {
            let rest = text.utf8.dropFirst(mastercardPrefix.utf8.count)
            let isHex = rest.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            return rest.count == mastercardHexDigits && isHex ? .mastercard : nil
        }
        return nil
    }
}
