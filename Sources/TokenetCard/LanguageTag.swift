/// The language a person asks the T&C in (`AddCard.language`): a BCP-47 tag such as `es` or `es-ES`.
///
/// A tag that is no language at all (`12!`, a sentence pasted in the wrong field) was sent on and answered in English
/// without a word; it is refused instead. A well-formed tag the TSP has no text for still gets its fallback (English),
/// as a language a product does not offer does.
public enum LanguageTag {
    /// The longest tag taken: far longer than any language-region-script tag in use.
    public static let maximumLength = 35

    /// Whether `text` has a BCP-47 tag's shape: a primary subtag of 2–3 or 5–8 letters, then subtags of 1–8 letters
    /// or digits, joined by hyphens (or underscores, as POSIX locales write `es_ES`).
    public static func isWellFormed(_ text: String) -> Bool {
        guard text.utf8.count <= maximumLength else { return false }
        let subtags = text.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let primary = subtags.first, [2, 3, 5, 6, 7, 8].contains(primary.count),
            primary.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return subtags.dropFirst().allSatisfy { subtag in
            (1...8).contains(subtag.count) && subtag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }
}
