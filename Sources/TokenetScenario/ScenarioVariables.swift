import TokenetWire

/// The values `save` lines keep, and their use as `${NAME}` in later lines.
public struct ScenarioVariables: Sendable {
    private var values: [String: JSONValue] = [:]

    public init() {}

    public subscript(name: String) -> JSONValue? {
        get { values[name] }
        set { values[name] = newValue }
    }

    /// Fills in every `${NAME}` of `text`. In JSON (`inJSON`), a saved string goes in as a string's content (escaped;
    /// the script writes the quotes: `"${card}"`), and an object or array as JSON; elsewhere a string goes in as it
    /// is. Numbers and booleans go in as their JSON text either way. `$${NAME}` is the text `${NAME}` itself.
    public func fill(_ text: String, inJSON: Bool) throws(ScenarioError) -> String {
        var result = ""
        var rest = Substring(text)
        while let reference = Self.nextReference(in: rest) {
            result += rest[..<reference.range.lowerBound]
            if reference.escaped {
                result += "${\(reference.name)}"
                rest = rest[reference.range.upperBound...]
                continue
            }
            guard let value = values[reference.name] else {
                throw ScenarioError(.undefinedVariable, "${\(reference.name)} has no value")
            }
            result += Self.text(of: value, inJSON: inJSON)
            rest = rest[reference.range.upperBound...]
        }
        return result + rest
    }

    private static func text(of value: JSONValue, inJSON: Bool) -> String {
        guard case .string(let string) = value else { return value.text() }
        guard inJSON else { return string }
        return String(JSONValue.string(string).text().dropFirst().dropLast())
    }

    /// JSON `text` with each `${NAME}` replaced by a stand-in of the same length, so that a line can be checked
    /// before its values exist: inside a string, letters; elsewhere `null` and spaces, where a saved value goes in as
    /// JSON. A parse error's byte offset then points into the script's own text. `$${NAME}` is left as it is.
    public static func withStandIns(_ text: String, inString filler: Character = "x") -> String {
        var result = ""
        var rest = Substring(text)
        var json = JSONStringState()
        while let reference = nextReference(in: rest) {
            let before = rest[..<reference.range.lowerBound]
            json.scan(before)
            result += before
            let written = rest[reference.range]
            if reference.escaped {
                json.scan(written)
                result += written
            } else {
                let length = written.utf8.count
                result +=
                    json.inString
                    ? String(repeating: filler, count: length) : "null" + String(repeating: " ", count: length - 4)
            }
            rest = rest[reference.range.upperBound...]
        }
        return result + rest
    }

    /// What `withStandIns(_:inString:)` writes for a reference inside a string to have `nullingReferences` find it: a
    /// character of Unicode's private use area, which no script's text means.
    public static let referenceMarker: Character = "\u{E000}"

    /// `value` (parsed from text with `referenceMarker` stand-ins) with every string that holds a reference, and
    /// every member whose name holds one, taken for a value not known yet: `null`, the default of any field, and
    /// left out of arrays (where a reference outside a string stands as `null` too). What is left is checked against
    /// the method's types before the saved values exist: field names, and the values written out.
    public static func nullingReferences(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text) where text.contains(referenceMarker): return .null
        case .array(let elements):
            return .array(elements.map(nullingReferences).filter { $0 != .null })
        case .object(let members):
            return .object(
                members.filter { !$0.key.contains(referenceMarker) }.map { ($0.key, nullingReferences($0.value)) })
        default: return value
        }
    }

    /// The names `text` refers to, in order.
    public static func references(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let reference = nextReference(in: rest) {
            if !reference.escaped { names.append(reference.name) }
            rest = rest[reference.range.upperBound...]
        }
        return names
    }

    /// The names JSON `text` refers to inside a string (`"${card}"`), in order: where a saved object goes in as the
    /// text of its JSON, which leaves the request unreadable.
    public static func referencesInsideStrings(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        var json = JSONStringState()
        while let reference = nextReference(in: rest) {
            json.scan(rest[..<reference.range.lowerBound])
            if reference.escaped {
                json.scan(rest[reference.range])
            } else if json.inString {
                names.append(reference.name)
            }
            rest = rest[reference.range.upperBound...]
        }
        return names
    }

    /// Whether `name` can be saved and referred to: a letter or `_`, then letters, digits, `_` or `-`.
    public static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || isLetter(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || $0 == "-" || isLetter($0) || ("0"..."9").contains($0) }
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    /// The next `${NAME}` with a valid name, or `$${NAME}` (`escaped`, the text `${NAME}`); any other `${` is left
    /// as text.
    private static func nextReference(
        in text: Substring
    ) -> (name: String, range: Range<Substring.Index>, escaped: Bool)? {
        var searchFrom = text.startIndex
        while let dollar = text[searchFrom...].firstIndex(of: "$") {
            var open = text.index(after: dollar)
            let escaped = open < text.endIndex && text[open] == "$"
            if escaped { open = text.index(after: open) }
            guard open < text.endIndex, text[open] == "{",
                let close = text[open...].firstIndex(of: "}")
            else {
                searchFrom = text.index(after: dollar)
                continue
            }
            let name = String(text[text.index(after: open)..<close])
            if isValidName(name) { return (name, dollar..<text.index(after: close), escaped) }
            searchFrom = text.index(after: dollar)
        }
        return nil
    }
}

/// Whether JSON text read so far ends inside a string: where a `${NAME}` goes in as a string's content.
private struct JSONStringState {
    private(set) var inString = false
    private var escaped = false

    mutating func scan(_ segment: Substring) {
        for character in segment.utf8 {
            if escaped {
                escaped = false
            } else if inString && character == UInt8(ascii: "\\") {
                escaped = true
            } else if character == UInt8(ascii: "\"") {
                inString.toggle()
            }
        }
    }
}
