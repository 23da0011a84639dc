/// A range of token BINs (leading digits) from which token PANs of one scheme are issued, for example Visa
/// `489537` or Mastercard `522222`–`522229`. Both bounds have the same number of digits.
public struct TokenBINRange: Sendable, Hashable, CustomStringConvertible {
    public let scheme: CardScheme
    public let low: String
    public let high: String

    /// A single-BIN range.
    public init(_ bin: String) throws(CardError) {
        try self.init(low: bin, high: bin)
    }

    /// Validates that both bounds are digit strings of equal length (4 to 12 digits), `low ≤ high`, and that every
    /// BIN in between belongs to the same eligible scheme (so a token always has its funding card's scheme).
    public init(low: String, high: String) throws(CardError) {
        guard low.utf8.allSatisfy({ (48...57).contains($0) }), high.utf8.allSatisfy({ (48...57).contains($0) }),
            low.utf8.count == high.utf8.count, (4...12).contains(low.utf8.count)
        else {
            throw CardError(
                .tokenConfiguration,
                "token BIN range \(low)–\(high) must be two digit strings of the same length, 4 to 12 digits"
            )
        }
        guard low <= high else {
            throw CardError(.tokenConfiguration, "token BIN range \(low)–\(high) has its bounds reversed")
        }
        let scheme = CardScheme(bin: low)
        guard scheme.isEligible else {
            throw CardError(.tokenConfiguration, "token BIN \(low) is neither a Visa nor a Mastercard BIN")
        }
        // Visa's BINs (4…) are one block, Mastercard's two (2221–2720 and 51–55) with other schemes between them:
        // both ends in the same block cover the middle, both ends of Mastercard alone do not (272000–510000 holds
        // Visa's).
        guard CardScheme(bin: high) == scheme, Self.block(of: low) == Self.block(of: high) else {
            throw CardError(.tokenConfiguration, "token BIN range \(low)–\(high) spans more than one card scheme")
        }
        self.scheme = scheme
        self.low = low
        self.high = high
    }

    /// Which contiguous block of its scheme's BINs `bin` is in: its first digit tells Mastercard's two apart.
    private static func block(of bin: String) -> UInt8? { bin.utf8.first }

    public var digitCount: Int { low.utf8.count }

    /// How many BINs the range holds.
    public var count: UInt64 { UInt64(high)! - UInt64(low)! + 1 }

    public func contains(_ pan: PAN) -> Bool {
        let prefix = String(pan.digits.prefix(digitCount))
        return low <= prefix && prefix <= high
    }

    public var description: String { low == high ? "\(scheme) \(low)" : "\(scheme) \(low)–\(high)" }
}
