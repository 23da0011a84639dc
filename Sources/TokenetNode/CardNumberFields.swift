import Foundation
import TokenetWire

/// Finds the text fields of a message that hold what reads as a card number (`maskPAN`'s rule), for the calls that
/// take free-form text from an operator or another party and store it, show it or pass it on: such a value is
/// refused naming its field, rather than kept where a card number must never be.
public enum CardNumberFields {
    /// The path of the first string or bytes field (its bytes read as UTF-8) of `message` that holds a card number,
    /// as `transaction.merchant` or `account_ids[2]`, under `prefix` when one is given; nil when none does.
    public static func first(in message: some ProtoMessage, prefix: String = "") -> String? {
        guard let json = try? message.jsonString(), let value = try? JSONValue(parsing: json) else { return nil }
        return first(in: value, fields: type(of: message).protoFields, path: prefix)
    }

    private static func first(in value: JSONValue, fields: [ProtoFieldInfo], path: String) -> String? {
        guard case .object(let members) = value else { return nil }
        for (key, member) in members {
            guard let field = fields.first(where: { $0.jsonName == key || $0.name == key }) else { continue }
            let fieldPath = path.isEmpty ? field.name : "\(path).\(field.name)"
            let elements: [(String, JSONValue)]
            if case .array(let items) = member {
                elements = items.enumerated().map { ("\(fieldPath)[\($0.offset)]", $0.element) }
            } else {
                elements = [(fieldPath, member)]
            }
            for (elementPath, element) in elements {
                if let found = check(element, field: field, path: elementPath) { return found }
            }
        }
        return nil
    }

    private static func check(_ value: JSONValue, field: ProtoFieldInfo, path: String) -> String? {
        switch (field.kind, field.typeName, value) {
        case (.message, let typeName, _):
            let name = typeName.hasPrefix(".") ? String(typeName.dropFirst()) : typeName
            guard let nested = ProtoRegistry.messageType(named: name) else { return nil }
            return first(in: value, fields: nested.protoFields, path: path)
        case (.scalar, "string", .string(let text)):
            return holdsCardNumber(text) ? path : nil
        case (.scalar, "bytes", .string(let base64)):
            guard let data = ProtoJSONBase64.decode(base64) else { return nil }
            return holdsCardNumber(String(decoding: data, as: UTF8.self)) ? path : nil
        default:
            return nil
        }
    }
}
