import TokenetWire

extension JSONValue {
    /// Why `self` (a response) does not contain `expected`, or nil when it does.
    ///
    /// "Contains" is what a script means by `expect OK {…}`: every field the expected object names holds a matching
    /// value, and fields it does not name may hold anything. Arrays match as a subsequence (each expected element
    /// matches a later element of the response than the one before), so a script can ask for one token among many;
    /// `[]` asks for an empty array.
    /// A missing field matches a default value (`false`, `0`, `""`, `[]`, `{}`, `null`) because proto3 JSON leaves
    /// such fields out. Numbers compare by value, and a number matches a string holding the same number (proto3 JSON
    /// writes 64-bit integers as strings).
    public func mismatch(containing expected: JSONValue, at path: JSONPath = JSONPath([])) -> String? {
        switch (expected, self) {
        case (.object(let wanted), .object(let members)):
            for (key, value) in wanted {
                var inner = path
                inner.components.append(.key(key))
                guard let member = members.first(where: { JSONValue.sameField($0.key, key) }) else {
                    if value.isDefault { continue }
                    // A field left out holds its default: `eligible: missing` read as if the response lacked the
                    // field, where it said false.
                    guard let held = value.defaultText else { return "\(inner): missing, expected \(value.text())" }
                    return "\(inner): expected \(value.text()), got \(held) (left out, as proto3 JSON leaves a default)"
                }
                if let reason = member.value.mismatch(containing: value, at: inner) { return reason }
            }
            return nil
        case (.array(let wanted), .array(let elements)):
            // An empty subsequence is in every array: `[]` would match anything, so it means "no elements", which
            // is how a script asks that a list is empty (a missing list, proto3 JSON's empty one, matches too).
            if wanted.isEmpty, !elements.isEmpty {
                return "\(label(path)): expected no elements ([]), got \(elements.count): \(self.text())"
            }
            var next = 0
            for (position, value) in wanted.enumerated() {
                guard
                    let found = elements[next...].firstIndex(where: { $0.mismatch(containing: value) == nil })
                else {
                    var inner = path
                    inner.components.append(.index(position))
                    let tail = next == 0 ? "" : " after element \(next - 1)"
                    let reason = elements.count > next ? elements[next].mismatch(containing: value) : nil
                    let nearest = reason.map { " (element \(next): \($0))" } ?? ""
                    return "\(label(path)): no element\(tail) matches \(value.text())\(nearest)"
                }
                next = found + 1
            }
            return nil
        case (.number(let a), .number(let b)), (.number(let a), .string(let b)), (.string(let a), .number(let b)):
            if a == b { return nil }
            // Integers exactly: through Double, 64-bit values above 2^53 that differ compared equal.
            if let x = Int128(a), let y = Int128(b) {
                return x == y ? nil : "\(label(path)): expected \(expected.text()), got \(self.text())"
            }
            if let x = Double(a), let y = Double(b), x == y { return nil }
            return "\(label(path)): expected \(expected.text()), got \(self.text())"
        default:
            if expected == self { return nil }
            if case .null = expected, isDefault { return nil }
            return "\(label(path)): expected \(expected.text()), got \(self.text())"
        }
    }

    private func label(_ path: JSONPath) -> String {
        path.components.isEmpty ? "the response" : path.description
    }

    /// The default of this value's kind as JSON, which a field left out holds; nil for a message, which is not set.
    var defaultText: String? {
        switch self {
        case .bool: "false"
        case .number: "0"
        case .string: "\"\""
        case .array: "[]"
        case .object, .null: nil
        }
    }

    /// Whether proto3 JSON would leave this value out of a message.
    var isDefault: Bool {
        switch self {
        case .null: true
        case .bool(let value): !value
        case .number(let text): Double(text) == 0
        case .string(let text): text.isEmpty
        case .array(let elements): elements.isEmpty
        case .object(let members): members.isEmpty
        }
    }
}
