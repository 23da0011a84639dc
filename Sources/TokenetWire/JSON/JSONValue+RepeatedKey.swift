extension JSONValue {
    /// The place of the first key an object in this value names twice, depth first (`"risk.accountScore"`,
    /// `"rules[2].pan"`), or nil. Decoders that keep one of two values without a word (Foundation's) read a text
    /// other than the one its author or its sender meant: a node's edited setting, or a second card number or key
    /// id slipped into a card-data payload or a JWE header (RFC 7515 §4 lets a reader refuse it).
    public var firstRepeatedKey: String? { Self.repeatedKey(in: self, at: "") }

    private static func repeatedKey(in value: JSONValue, at path: String) -> String? {
        switch value {
        case .object(let members):
            var seen: Set<String> = []
            for member in members where !seen.insert(member.key).inserted {
                return path.isEmpty ? member.key : "\(path).\(member.key)"
            }
            for member in members {
                if let found = repeatedKey(in: member.value, at: path.isEmpty ? member.key : "\(path).\(member.key)") {
                    return found
                }
            }
            return nil
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let found = repeatedKey(in: element, at: "\(path)[\(index)]") { return found }
            }
            return nil
        default:
            return nil
        }
    }
}
