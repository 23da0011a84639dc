import Foundation
import Synchronization
import TokenetNode
import TokenetWire

/// The fields whose values the decoders never print, whatever message holds them: a card's security code (`cvc`),
/// a PIN (`pin`), a strong-authentication credential's secret (`secret`), the bearer credentials a capture would
/// let someone replay: an issuer app's activation code (`activation_code`) and access token (`access_token`), and
/// the one-time and HOTP codes that finish a step-up or a login (`code`, `user_code`, `device_code`, `first_code`,
/// `second_code`), and the otp:// link that carries an activation code (`link`), which the nodes' logs hide too. A card number is masked wherever it appears (`maskPAN`); these are
/// masked by name, since a three-digit code or a PIN looks like any other value, and only as text or bytes (a
/// status's `code` is an enum). Tools/protoc-gen-tokenet-swift lists the same names for the dissector.
enum SecretFields {
    static let names: Set<String> = [
        "cvc", "pin", "secret", "activation_code", "activationCode", "access_token", "accessToken", "code",
        "user_code", "userCode", "device_code", "deviceCode", "first_code", "firstCode", "second_code", "secondCode",
        "link",
    ]

    /// Secret as text only: an issuer's push receipt (`payload`, a string), which adds its card to whichever wallet
    /// redeems it first when it names no wallet node, as the logs hide it; the benchmark's `payload` is bytes.
    static let textNames: Set<String> = ["payload"]

    /// `json` (proto3 JSON of a `type`, as the decoders print it) with every card number masked and every secret
    /// field's value replaced by `"***"`: what the decoders print. The JSON is read and written again, so a string
    /// is masked as the text it holds, escapes read (a tab between a card number's groups, written `\t`, joins them
    /// as it does in a log). Which fields are text and which are bytes is read from `type`'s schema, as the
    /// dissector reads it from its generated tables (Tools/dissector/tokenet.lua), so that both tools mask alike.
    static func maskedJSON(_ json: String, as type: any ProtoMessage.Type, _ reading: Reading) -> String {
        guard let value = try? JSONValue(parsing: json) else { return maskPAN(json) }
        return masked(value, as: type, reading).text(indent: json.contains("\n") ? 2 : 0)
    }

    /// `value` read as a message of `type` (nil: of no known type, where only card numbers and secret names count).
    static func masked(_ value: JSONValue, as type: (any ProtoMessage.Type)?, _ reading: Reading) -> JSONValue {
        switch value {
        case .string(let text):
            return .string(maskPAN(text))
        case .number(let text):
            // A double or float whose digits read as a card number (int64 fields are strings already): written
            // masked, as a string, which proto3 JSON reads for a number too.
            let shown = maskPAN(text)
            return shown == text ? value : .string(shown)
        case .array(let items):
            return .array(items.map { masked($0, as: type, reading) })
        case .object(let members):
            if type == WireV1.StatusDetail.self, reading == .frame { return StatusDetailValue.masked(members) }
            let fields = type.map(fieldsByName(of:)) ?? [:]
            return .object(
                members.map { member in
                    let field = fields[member.key]
                    if names.contains(member.key), case .string = member.value,
                        field.map({ ["string", "bytes"].contains($0.typeName) }) ?? true
                    {
                        return (member.key, .string("***"))
                    }
                    if textNames.contains(member.key), case .string = member.value, field?.typeName == "string" {
                        return (member.key, .string("***"))
                    }
                    guard let field else { return (member.key, masked(member.value, as: nil, reading)) }
                    return (member.key, masked(member.value, field: field, reading))
                })
        default:
            return value
        }
    }

    static func masked(_ value: JSONValue, field: ProtoFieldInfo, _ reading: Reading) -> JSONValue {
        switch value {
        case .array(let items):
            return .array(items.map { masked($0, field: field, reading) })
        case .string(let text) where field.typeName == "string":
            return .string(reading.maskedText(text))
        case .string(let text) where field.typeName == "bytes":
            return .string(reading.maskedBytes(text))
        default:
            let nested = field.kind == .message ? messageType(named: field.typeName) : nil
            return masked(value, as: nested, reading)
        }
    }

    /// The fields of each message type by JSON name and by `.proto` name, and the message types by name, each
    /// looked up once: built again for every object, they took `tokenet decode` 198 s for a 4 MiB message of a
    /// million empty elements.
    private struct SchemaCache: Sendable {
        var fields: [String: [String: ProtoFieldInfo]] = [:]
        var types: [String: any ProtoMessage.Type] = [:]
    }

    private static let schema = Mutex(SchemaCache())

    static func fieldsByName(of type: any ProtoMessage.Type) -> [String: ProtoFieldInfo] {
        if let known = schema.withLock({ $0.fields[type.protoName] }) { return known }
        var byName: [String: ProtoFieldInfo] = [:]
        // The JSON name first: a `.proto` name that is another field's JSON name (none in Tokenet's) keeps it.
        for field in type.protoFields.reversed() {
            byName[field.name] = field
        }
        for field in type.protoFields.reversed() {
            byName[field.jsonName] = field
        }
        schema.withLock { $0.fields[type.protoName] = byName }
        return byName
    }

    static func messageType(named name: String) -> (any ProtoMessage.Type)? {
        if let known = schema.withLock({ $0.types[name] }) { return known }
        guard let type = ProtoRegistry.messageType(named: name) else { return nil }
        schema.withLock { $0.types[name] = type }
        return type
    }
}
