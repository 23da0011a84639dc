/// A parsed JSON document, kept close to its text.
///
/// Numbers keep their literal text so that 64-bit integers are read exactly (a Double would round them), and object
/// members keep their order and duplicates so that the proto JSON decoder can report a repeated field by name.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// A short name of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

// MARK: - Reading

extension JSONValue {
    /// Parses one JSON text strictly (RFC 8259, nesting bounded); throws `WireError(.invalidJSON)` naming the byte
    /// where the text stops being JSON.
    public init(parsing text: String) throws(WireError) {
        do {
            self = try JSONParser.parse(text)
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.invalidJSON, "\(error)")
        }
    }
}

// MARK: - Writing

extension JSONValue {
    /// The JSON text; `indent` > 0 pretty-prints with that many spaces per level.
    public func text(indent: Int = 0) -> String {
        var out = ""
        write(to: &out, indent: indent, level: 0)
        return out
    }

    private func write(to out: inout String, indent: Int, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let string): JSONValue.writeString(string, to: &out)
        case .array(let values):
            guard !values.isEmpty else {
                out += "[]"
                return
            }
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                JSONValue.newline(&out, indent: indent, level: level + 1)
                value.write(to: &out, indent: indent, level: level + 1)
            }
            JSONValue.newline(&out, indent: indent, level: level)
            out += "]"
        case .object(let members):
            guard !members.isEmpty else {
                out += "{}"
                return
            }
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                JSONValue.newline(&out, indent: indent, level: level + 1)
                JSONValue.writeString(member.key, to: &out)
                out += indent > 0 ? ": " : ":"
                member.value.write(to: &out, indent: indent, level: level + 1)
            }
            JSONValue.newline(&out, indent: indent, level: level)
            out += "}"
        }
    }

    private static func newline(_ out: inout String, indent: Int, level: Int) {
        guard indent > 0 else { return }
        out += "\n"
        out += String(repeating: " ", count: indent * level)
    }

    /// Whether `string` is printable ASCII with no quote or backslash, read from its bytes in place when it has them
    /// together (a closure per byte was most of the time for megabytes).
    private static func isPlain(_ string: String) -> Bool {
        func plain(_ byte: UInt8) -> Bool {
            byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
        }
        if let answer = string.utf8.withContiguousStorageIfAvailable({ bytes in
            for byte in bytes where !plain(byte) { return false }
            return true
        }) {
            return answer
        }
        return string.utf8.allSatisfy(plain)
    }

    private static func writeString(_ string: String, to out: inout String) {
        out += "\""
        // Printable ASCII with no quote or backslash goes as it is, in one piece: base64 of a message of megabytes
        // was written a character at a time.
        if Self.isPlain(string) {
            out += string
            out += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            // The C0 controls, DEL and the C1 controls (U+0080 to U+009F, such as NEL and CSI) act on a terminal;
            // format characters (a bidirectional override, a zero-width space) and the line and paragraph separators
            // hide or reorder what it shows. The CLI's guard for terminals would rewrite one left as it is into a form
            // that is no JSON; as a `\u` escape (two, for one beyond the Basic Multilingual Plane) it reads back the same.
            case _ where scalar.isInvisibleInText:
                for unit in String(scalar).utf16 {
                    let hex = String(unit, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
