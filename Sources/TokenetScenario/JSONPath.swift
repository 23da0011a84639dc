import TokenetWire

/// A field of a response, as `save` and error messages name it: `cardRef`, `tokens.0.tokenId` or `tokens[0].tokenId`.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component]) {
        self.components = components
    }

    /// Parses dotted keys with array positions as `.N` or `[N]`; nil for an empty path or an empty key.
    public init?(parsing text: String) {
        var components: [Component] = []
        for part in text.split(separator: ".", omittingEmptySubsequences: false) {
            var rest = Substring(part)
            let keyEnd = rest.firstIndex(of: "[") ?? rest.endIndex
            let key = rest[..<keyEnd]
            rest = rest[keyEnd...]
            if let index = Int(key), index >= 0, key.allSatisfy(\.isASCII) {
                components.append(.index(index))
            } else if !key.isEmpty && !key.contains("]") {
                components.append(.key(String(key)))
            } else if !key.isEmpty || rest.isEmpty || components.isEmpty {
                return nil
            }
            while !rest.isEmpty {
                guard rest.first == "[", let close = rest.firstIndex(of: "]"),
                    let index = Int(rest[rest.index(after: rest.startIndex)..<close]), index >= 0
                else { return nil }
                components.append(.index(index))
                rest = rest[rest.index(after: close)...]
            }
        }
        guard !components.isEmpty else { return nil }
        self.components = components
    }

    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key): text += text.isEmpty ? key : ".\(key)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }
}

extension JSONValue {
    /// The value at `path`, or a message that names the first part of the path that is not there (and what is).
    public func value(at path: JSONPath) -> Result<JSONValue, ScenarioError> {
        var value = self
        var walked = JSONPath([])
        for component in path.components {
            switch (component, value) {
            case (.key(let key), .object(let members)):
                guard let member = members.first(where: { JSONValue.sameField($0.key, key) }) else {
                    let names = members.map(\.key).joined(separator: ", ")
                    return .failure(
                        ScenarioError(
                            .missingField,
                            "\(walked.components.isEmpty ? "the response" : "'\(walked)'") has no field '\(key)' "
                                + (names.isEmpty
                                    ? "(it is empty: proto3 JSON leaves out fields that hold their default)"
                                    : "(it has \(names))")))
                }
                value = member.value
            case (.index(let index), .array(let elements)):
                guard index < elements.count else {
                    let count = elements.count == 1 ? "1 element" : "\(elements.count) elements"
                    return .failure(ScenarioError(.missingField, "'\(walked)' has \(count), so no [\(index)]"))
                }
                value = elements[index]
            case (.key(let key), _):
                return .failure(
                    ScenarioError(.missingField, "'\(walked)' is \(value.kindName), so it has no field '\(key)'"))
            case (.index(let index), _):
                return .failure(
                    ScenarioError(.missingField, "'\(walked)' is \(value.kindName), so it has no element [\(index)]"))
            }
            walked.components.append(component)
        }
        return .success(value)
    }

    /// Whether a key written in a script names a member: the same text, or a snake_case field name written as
    /// proto3 JSON spells it (`card_ref` for `cardRef`), since people copy names from the .proto files.
    static func sameField(_ member: String, _ written: String) -> Bool {
        member == written || (written.contains("_") && member == lowerCamelCase(written))
    }

    static func lowerCamelCase(_ name: String) -> String {
        var result = ""
        var upperNext = false
        for character in name {
            if character == "_" {
                upperNext = true
            } else {
                result += upperNext ? character.uppercased() : String(character)
                upperNext = false
            }
        }
        return result
    }
}
