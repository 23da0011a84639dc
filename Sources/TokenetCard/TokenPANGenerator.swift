/// Issues token PANs: numbers that stand in for a funding card number in payments.
///
/// A token PAN has the funding card's scheme and length, starts with a BIN from that scheme's configured token BIN
/// range, has random middle digits and a correct Luhn check digit, and is never equal to the funding PAN (or to any
/// number the caller says is taken, such as tokens already issued).
public struct TokenPANGenerator: Sendable {
    public let ranges: [CardScheme: TokenBINRange]

    /// How many random candidates are tried before giving up; a nearly full range fails with a clear error
    /// instead of looping.
    public static let maximumAttempts = 1000

    /// One range per scheme; a second range for the same scheme is a configuration error.
    public init(ranges: [TokenBINRange]) throws(CardError) {
        var byScheme: [CardScheme: TokenBINRange] = [:]
        for range in ranges {
            guard byScheme[range.scheme] == nil else {
                throw CardError(.tokenConfiguration, "more than one token BIN range is configured for \(range.scheme)")
            }
            byScheme[range.scheme] = range
        }
        self.ranges = byScheme
    }

    /// The sandbox's default ranges: Visa 489537 and Mastercard 522222.
    public static func sandbox() -> TokenPANGenerator {
        try! TokenPANGenerator(ranges: [TokenBINRange("489537"), TokenBINRange("522222")])
    }

    /// A new token PAN for `funding`, using the system's cryptographically secure random numbers.
    public func generate(for funding: PAN, isTaken: (PAN) -> Bool = { _ in false }) throws(CardError) -> PAN {
        var random = SystemRandomNumberGenerator()
        return try generate(for: funding, using: &random, isTaken: isTaken)
    }

    /// A new token PAN for `funding`, drawing digits from `random`.
    public func generate(
        for funding: PAN,
        using random: inout some RandomNumberGenerator,
        isTaken: (PAN) -> Bool = { _ in false }
    ) throws(CardError) -> PAN {
        guard funding.scheme.isEligible else { throw CardError(rejection: .unsupportedScheme) }
        guard let range = ranges[funding.scheme] else {
            throw CardError(.tokenConfiguration, "no token BIN range is configured for \(funding.scheme)")
        }
        let middleCount = funding.length - range.digitCount - 1
        guard middleCount >= 0 else {
            throw CardError(
                .tokenConfiguration,
                "token BIN range \(range) is too long for a \(funding.length)-digit card number"
            )
        }
        let low = UInt64(range.low)!
        for _ in 0..<Self.maximumAttempts {
            var payload = String(low + random.next(upperBound: range.count))
            for _ in 0..<middleCount { payload.append(Character(String(random.next(upperBound: 10 as UInt8)))) }
            payload.append(Luhn.checkDigit(for: payload)!)
            let candidate = PAN(unchecked: payload)
            if candidate != funding && !isTaken(candidate) { return candidate }
        }
        throw CardError(
            .tokenConfiguration,
            "no free token PAN found in \(range) after \(Self.maximumAttempts) attempts; the range is exhausted"
        )
    }
}
