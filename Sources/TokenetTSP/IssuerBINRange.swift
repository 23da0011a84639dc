import TokenetCard

/// An issuer's BIN range: inclusive prefixes of equal length ("400000"–"400099"), compared on the card's first
/// digits.
struct IssuerBINRange: Sendable, Hashable {
    let low: String
    let high: String

    /// Validates a range as registered; the message names the bad range.
    init(low: String, high: String) throws(TSPError) {
        let isDigits = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { (48...57).contains($0) } }
        guard isDigits(low), isDigits(high), low.utf8.count == high.utf8.count, (1...11).contains(low.utf8.count)
        else {
            throw TSPError(
                .invalidArgument,
                "BIN range \"\(low)\"–\"\(high)\" must be two digit prefixes of equal length (1 to 11 digits)")
        }
        guard low <= high else {
            throw TSPError(.invalidArgument, "BIN range \(low)–\(high) has its low end above its high end")
        }
        self.low = low
        self.high = high
    }

    func contains(_ pan: PAN) -> Bool {
        let prefix = String(pan.digits.prefix(low.utf8.count))
        return prefix.utf8.count == low.utf8.count && low <= prefix && prefix <= high
    }

    func overlaps(_ other: IssuerBINRange) -> Bool {
        let length = min(low.utf8.count, other.low.utf8.count)
        let (lowA, highA) = (low.prefix(length), high.prefix(length))
        let (lowB, highB) = (other.low.prefix(length), other.high.prefix(length))
        return lowA <= highB && lowB <= highA
    }
}
