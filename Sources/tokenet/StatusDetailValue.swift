import Foundation
import TokenetNode
import TokenetWire

/// A status detail's value as the decoders show it: decoded and masked when its type is a message this build knows
/// and its bytes are that message whole; otherwise by its length alone (`withheldBytes`), as the dissector shows it,
/// since which of its fields is a security code cannot be told.
enum StatusDetailValue {
    static func masked(_ members: [(key: String, value: JSONValue)]) -> JSONValue {
        var type: (any ProtoMessage.Type)?
        if case .string(let name) = members.first(where: { $0.key == "type" })?.value {
            type = ProtoRegistry.messageType(named: name)
        }
        return .object(
            members.flatMap { member -> [(key: String, value: JSONValue)] in
                guard member.key == "value" else {
                    return [(member.key, SecretFields.masked(member.value, as: nil, .frame))]
                }
                guard case .string(let base64) = member.value, let data = ProtoJSONBase64.decode(base64) else {
                    return [("value", .string("***"))]
                }
                if let type, let json = decoded(data, as: type), let value = try? JSONValue(parsing: json) {
                    return [("value", SecretFields.masked(value, as: type, .confirmed))]
                }
                return [("withheldBytes", .number("\(data.count)"))]
            })
    }

    /// The value's JSON, when its bytes decode as `type` with no field that type does not have.
    static func decoded(_ data: Data, as type: any ProtoMessage.Type) -> String? {
        guard type.unknownFieldCount(in: [UInt8](data)) == 0,
            let message = try? type.init(serializedBytes: data)
        else { return nil }
        return try? message.jsonString(options: .pretty)
    }
}
