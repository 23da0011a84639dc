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
                // A response is a message: a path starts with one of its fields, not with an element.
                guard !components.isEmpty else { return nil }
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
                    return .failure(JSONPath.noElement(index, of: elements.count, in: walked))
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

/// The same walk with the response's message type at hand: proto3 JSON leaves out a field that holds its default
/// (`false`, `0`, `""`, an empty list), so a `save` of a field a response does have failed as "no field" whenever
/// its value was the default, while `expect` took it; and a path is checked against the type before a run.
extension JSONValue {
    /// The value at `path` in this message of type `type`: a field the JSON leaves out is read as its default (an
    /// empty list, an empty message, the zero enum value's name, `0`, `false`, `""`).
    public func value(at path: JSONPath, type: any ProtoMessage.Type) -> Result<JSONValue, ScenarioError> {
        var value = self
        var fields: [ProtoFieldInfo]? = type.protoFields
        var elementField: ProtoFieldInfo?
        var walked = JSONPath([])
        for component in path.components {
            switch (component, value) {
            case (.key(let key), .object(let members)):
                guard let current = fields, let field = JSONPath.field(key, in: current) else {
                    return self.value(at: path)
                }
                value =
                    members.first { JSONValue.sameField($0.key, key) || $0.key == field.name }?.value
                    ?? JSONPath.defaultValue(of: field)
                (fields, elementField) =
                    field.cardinality == .repeated ? (nil, field) : (JSONPath.nestedFields(of: field), nil)
            case (.index(let index), .array(let elements)):
                guard index < elements.count else {
                    return .failure(JSONPath.noElement(index, of: elements.count, in: walked))
                }
                value = elements[index]
                fields = elementField.flatMap(JSONPath.nestedFields(of:))
                elementField = nil
            default:
                return self.value(at: path)
            }
            walked.components.append(component)
        }
        return .success(value)
    }
}

extension JSONPath {
    /// What is wrong with this path as a field of a `type` message, naming the first part that is no field (and the
    /// fields there are); nil when every part is one.
    public func problem(in type: any ProtoMessage.Type) -> String? {
        var fields: [ProtoFieldInfo]? = type.protoFields
        var owner = type.protoName
        var elementField: ProtoFieldInfo?
        var walked = JSONPath([])
        for component in components {
            switch component {
            case .key(let key):
                guard let current = fields else {
                    let what = elementField == nil ? "is a single value" : "is a list: give an element as [N]"
                    return "'\(walked)' \(what), so it has no field '\(key)'"
                }
                guard let field = Self.field(key, in: current) else {
                    return "\(owner) has no field '\(key)' (it has \(current.map(\.jsonName).joined(separator: ", ")))"
                }
                if field.cardinality == .repeated {
                    (fields, elementField) = (nil, field)
                } else {
                    (fields, elementField) = (Self.nestedFields(of: field), nil)
                    owner = field.typeName
                }
            case .index(let index):
                guard let field = elementField else {
                    return "'\(walked)' is no list, so it has no element [\(index)]"
                }
                fields = Self.nestedFields(of: field)
                owner = field.typeName
                elementField = nil
            }
            walked.components.append(component)
        }
        return nil
    }

    /// "'tokens' has 1 element, so no [1]".
    static func noElement(_ index: Int, of count: Int, in list: JSONPath) -> ScenarioError {
        ScenarioError(
            .missingField, "'\(list)' has \(count == 1 ? "1 element" : "\(count) elements"), so no [\(index)]")
    }

    /// The field `key` names: its JSON name, its .proto name, or that name written in snake_case.
    static func field(_ key: String, in fields: [ProtoFieldInfo]) -> ProtoFieldInfo? {
        fields.first { $0.jsonName == key || $0.name == key || JSONValue.sameField($0.jsonName, key) }
    }

    /// The fields of a message field's type; nil for any other field.
    static func nestedFields(of field: ProtoFieldInfo) -> [ProtoFieldInfo]? {
        guard field.kind == .message else { return nil }
        let name = field.typeName.hasPrefix(".") ? String(field.typeName.dropFirst()) : field.typeName
        return ProtoRegistry.messageType(named: name)?.protoFields
    }

    /// The proto types of 64-bit integers, which proto3 JSON writes as strings.
    static let sixtyFourBitIntegers: Set<String> = ["int64", "uint64", "sint64", "fixed64", "sfixed64"]

    /// What proto3 JSON would show for a field that holds its default.
    static func defaultValue(of field: ProtoFieldInfo) -> JSONValue {
        if field.cardinality == .repeated { return .array([]) }
        switch field.kind {
        case .message:
            return .object([])
        case .enumeration:
            return .string(field.enumValues.first { $0.number == 0 }?.name ?? "0")
        case .scalar:
            switch field.typeName {
            case "string", "bytes": return .string("")
            case "bool": return .bool(false)
            // 64-bit integers are strings in proto3 JSON, as a node writes them.
            case let type where sixtyFourBitIntegers.contains(type): return .string("0")
            default: return .number("0")
            }
        }
    }
}

extension JSONValue {
    /// This response (a `type` message in proto3 JSON) with each enum field it leaves out written with its zero
    /// value's name, at any depth: proto3 JSON leaves out an enum that holds its zero value, and an expectation that
    /// named it (`{"status": "SERVING_STATUS_UNKNOWN"}`) never matched, though `save` reads the name.
    public func withEnumDefaults(for type: any ProtoMessage.Type) -> JSONValue {
        withEnumDefaults(fields: type.protoFields)
    }

    private func withEnumDefaults(fields: [ProtoFieldInfo]) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members = members.map { member in
            guard let field = JSONPath.field(member.key, in: fields), let nested = JSONPath.nestedFields(of: field)
            else { return member }
            if case .array(let items) = member.value {
                return (member.key, .array(items.map { $0.withEnumDefaults(fields: nested) }))
            }
            return (member.key, member.value.withEnumDefaults(fields: nested))
        }
        for field in fields
        where field.kind == .enumeration && field.cardinality == .singular && field.oneofGroup == nil
            && !members.contains(where: { JSONValue.sameField($0.key, field.jsonName) })
        {
            members.append((field.jsonName, JSONPath.defaultValue(of: field)))
        }
        return .object(members)
    }

    /// This expected object with the 64-bit integers of a `type` message written as proto3 JSON writes them, as
    /// strings (`"pending": "0"`, a value `save` kept), turned to numbers: a response leaves out a field that holds
    /// 0, and only a number 0 matched that, not the string a node sends for any other value.
    public func withIntegersAsNumbers(for type: any ProtoMessage.Type) -> JSONValue {
        withIntegersAsNumbers(fields: type.protoFields)
    }

    private func withIntegersAsNumbers(fields: [ProtoFieldInfo]) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(
            members.map { member in
                guard let field = JSONPath.field(member.key, in: fields) else { return member }
                func converted(_ value: JSONValue) -> JSONValue {
                    if let nested = JSONPath.nestedFields(of: field) {
                        return value.withIntegersAsNumbers(fields: nested)
                    }
                    // An enum given by number, as proto3 JSON accepts it, compares as its name, which nodes send.
                    if field.kind == .enumeration, case .number(let text) = value, let number = Int32(text),
                        let name = field.enumValues.first(where: { $0.number == number })?.name
                    {
                        return .string(name)
                    }
                    if JSONPath.sixtyFourBitIntegers.contains(field.typeName), case .string(let text) = value,
                        Int64(text) != nil
                            || UInt64(text) != nil
                    {
                        return .number(text)
                    }
                    return value
                }
                if case .array(let items) = member.value { return (member.key, .array(items.map(converted))) }
                return (member.key, converted(member.value))
            })
    }
}
