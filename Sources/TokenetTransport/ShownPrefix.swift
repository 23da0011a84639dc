/// The start of a text someone gave (a method, a service, a symbol, a metadata key, a goaway's reason, a word of a
/// command), cut for a message or a log line. Card numbers are masked in both, but after the cut: a number cut in
/// two left its first eleven or twelve digits, too few to be known as a card number, in clear. So the cut never
/// splits a number: it goes back before the digits (and the spaces and punctuation between them) that end the kept
/// part.
public enum ShownPrefix {
    /// The longest start of `text` of at most `utf8Limit` bytes of UTF-8 that ends where a character starts and
    /// outside a number; nil when the whole text fits.
    public static func cut(_ text: String, utf8Limit: Int) -> String? {
        guard text.utf8.count > utf8Limit else { return nil }
        var bytes = 0
        var end = text.unicodeScalars.startIndex
        for index in text.unicodeScalars.indices {
            let size = UTF8.width(text.unicodeScalars[index])
            guard bytes + size <= utf8Limit else { break }
            bytes += size
            end = text.unicodeScalars.index(after: index)
        }
        return outsideNumber(text.unicodeScalars[..<end])
    }

    /// The longest start of `text` of at most `scalarLimit` Unicode scalars that ends outside a number; nil when the
    /// whole text fits.
    public static func cut(_ text: String, scalarLimit: Int) -> String? {
        guard text.unicodeScalars.count > scalarLimit else { return nil }
        return outsideNumber(text.unicodeScalars.prefix(scalarLimit))
    }

    /// `kept` without its last run of scalars that are no letters, when that run holds a digit: the run may be the
    /// start of a number the cut split.
    private static func outsideNumber(_ kept: Substring.UnicodeScalarView) -> String {
        var start = kept.endIndex
        var holdsDigit = false
        while start > kept.startIndex {
            let before = kept.index(before: start)
            let scalar = kept[before]
            guard !scalar.properties.isAlphabetic else { break }
            if scalar.properties.numericType != nil { holdsDigit = true }
            start = before
        }
        return String(String.UnicodeScalarView(holdsDigit ? kept[..<start] : kept))
    }

    /// `text` whole when it has at most `scalarLimit` Unicode scalars, else its start (`cut(_:scalarLimit:)`) and "…".
    public static func shortened(_ text: some StringProtocol, scalarLimit: Int) -> String {
        let text = String(text)
        return cut(text, scalarLimit: scalarLimit).map { $0 + "…" } ?? text
    }
}
