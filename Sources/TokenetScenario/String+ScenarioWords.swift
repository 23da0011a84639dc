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
