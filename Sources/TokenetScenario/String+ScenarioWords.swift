/// The few text operations the line parser needs, without Foundation.
extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    /// The first blank-separated word and the rest of the text, trimmed.
    func firstWord() -> (String, String) {
        let text = trimmingWhitespace()
        guard let end = text.firstIndex(where: \.isWhitespace) else { return (text, "") }
        return (String(text[..<end]), String(text[end...]).trimmingWhitespace())
    }

    /// Whether the text opens a double quote that its end does not close (`"no token`, `"no token\"`): `unquoted()`
    /// would take the quote as part of the text, which no message holds.
    var opensUnclosedQuote: Bool {
        guard hasPrefix("\"") else { return false }
        var escaped = false
        var closedAtEnd = false
        for character in dropFirst() {
            closedAtEnd = false
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                closedAtEnd = true
            }
        }
        return !closedAtEnd
    }

    /// The text between surrounding double quotes (with `\"` and `\\` unescaped), or the text as it is.
    func unquoted() -> String {
        guard count >= 2, hasPrefix("\""), hasSuffix("\"") else { return self }
        var result = ""
        var escaped = false
        for character in dropFirst().dropLast() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}
