/// A number of seconds as a person types one: digits, with an optional fraction after a point (`30`, `0.5`).
///
/// `Double(text)` also takes Swift's and C's other spellings (`0x10`, `1e3`, `+5`, `.5`, `5.`, `0x1p3`): a timeout
/// given that way was taken, unlike the same form in the options that read whole numbers, and the error for a bad one
/// promised the plain form only.
public enum PlainDecimal {
    public static func parse(_ text: String) -> Double? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (48...57).contains($0) } }) else { return nil }
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }
}
