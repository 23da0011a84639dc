/// Durations as people type them on a command line or in a proxy command: a decimal number and a unit (`5s`,
/// `200ms`, `1.5s`, `2m`, `1h`, `500us`), or several such parts one after another as Go writes them (`1m30s`,
/// `2s500ms`). Numbers are decimal digits with at most one point: `0x10s` and `1e3ms`, which `Double(String)` would
/// take, are no durations.
public enum DurationSyntax {
    /// Each unit with its length in seconds, the longer spelling first ("ms" before "m").
    static let units: [(suffix: String, seconds: Double)] = [
        ("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("ns", 1e-9), ("s", 1), ("m", 60), ("h", 3600),
    ]

    /// The seconds `text` adds up to, or nil when it is not a list of parts; `0s` is zero, and what is allowed is
    /// for the caller to say. A leading `+` is taken, as Go takes it (`+5s`); a sign anywhere else is not. Parts go
    /// from the longest unit to the shortest, each unit once (`1m30s`): Go adds up `1s1s` or `30s1m` too, but they
    /// are more likely a slip than a way of writing 2 s or 90 s.
    public static func seconds(in text: some StringProtocol) -> Double? {
        parts(of: text).flatMap { parts in
            zip(parts, parts.dropFirst()).allSatisfy { $0.unit > $1.unit }
                ? parts.reduce(0) { $0 + $1.value * $1.unit } : nil
        }
    }

    /// The number and unit length (in seconds) of each part, in order, or nil when `text` is not a list of parts.
    static func parts(of text: some StringProtocol) -> [(value: Double, unit: Double)]? {
        var rest = Substring(text)
        if rest.hasPrefix("+") { rest = rest.dropFirst() }
        guard !rest.isEmpty else { return nil }
        var parts: [(value: Double, unit: Double)] = []
        while !rest.isEmpty {
            let number = rest.prefix { $0 == "." || ($0.isASCII && $0.isNumber) }
            guard isDecimal(number), let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.suffix) }) else { return nil }
            rest = rest.dropFirst(unit.suffix.count)
            parts.append((value, unit.seconds))
        }
        return parts
    }

    /// What to write instead of `text` when a small change makes it a duration, said as a hint: parts out of order
    /// or a unit twice (`1s1s`), a last part without its unit (`5`, `1m30`: seconds asked for rather than guessed),
    /// or units in capitals (`5S`). With `positive`, a zero gets no hint: where only a positive duration is taken.
    public static func hint(for text: String, positive: Bool = false) -> String? {
        if seconds(in: text) == nil, parts(of: text) != nil {
            return "each unit once, the longest first, as in 1m30s"
        }
        // Not for a zero where only a positive duration is taken: "0s" would be refused in turn.
        if let value = seconds(in: text + "s"), value > 0 || !positive { return "with a unit: \(text)s for seconds" }
        let lower = text.lowercased()
        if lower != text, seconds(in: lower) != nil { return "units are lower case: \(lower)" }
        return nil
    }

    /// Digits with at most one decimal point among them: `5`, `1.5`, `.5`, `5.`.
    public static func isDecimal(_ text: some StringProtocol) -> Bool {
        let digits = text.filter { $0 != "." }
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber } && text.count - digits.count <= 1
    }
}
