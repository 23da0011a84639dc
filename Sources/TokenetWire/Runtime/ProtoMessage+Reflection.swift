import CProtobufC

/// One field of a generated message, as the protobuf-c descriptor records it.
///
/// This is what the reflection service and the CLI show when they describe a message, so a person (or a client
/// holding no `.proto` files) can write a request in JSON.
public struct ProtoFieldInfo: Hashable, Sendable {
    public enum Cardinality: String, Hashable, Sendable {
        /// A proto3 field without presence: absent means its default value.
        case singular
        /// A message field, or a member of a oneof: absent and default are different.
        case optional
        case repeated
    }

    /// The name in the `.proto` file, for example `stream_id`.
    public let name: String
    /// The proto3 JSON name, for example `streamId`.
    public let jsonName: String
    public let number: UInt32
    /// The proto type: `uint32`, `string`, `bytes`, …, or the fully-qualified message or enum name.
    public let typeName: String
    public let cardinality: Cardinality
    /// Whether the field is a member of a oneof; members of one oneof share `oneofGroup`.
    public let oneofGroup: Int?
    /// The declared values of an enum field, by name.
    public let enumValues: [(name: String, number: Int32)]

    public static func == (lhs: ProtoFieldInfo, rhs: ProtoFieldInfo) -> Bool {
        lhs.name == rhs.name && lhs.number == rhs.number && lhs.typeName == rhs.typeName
            && lhs.cardinality == rhs.cardinality && lhs.oneofGroup == rhs.oneofGroup
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(number)
        hasher.combine(typeName)
    }
}

extension ProtoMessage {
    /// The message's fields in field-number order.
    public static var protoFields: [ProtoFieldInfo] {
        _protobufC.fields
    }
}

extension _ProtoDescriptor {
    var fields: [ProtoFieldInfo] {
        (0..<Int(pointer.pointee.n_fields)).map { index in
            let field = ProtoField(pointer, field: pointer.pointee.fields + index)
            let typeName: String
            var enumValues: [(name: String, number: Int32)] = []
            switch field.type {
            case .message:
                typeName = String(cString: field.messageDescriptor.pointee.name)
            case .enumeration:
                let descriptor = field.enumDescriptor.pointee
                typeName = String(cString: descriptor.name)
                enumValues = (0..<Int(descriptor.n_values)).map {
                    (String(cString: descriptor.values[$0].name), descriptor.values[$0].value)
                }
            case .unsupported:
                typeName = "unsupported"
            default:
                typeName = "\(field.type)"
            }
            let cardinality: ProtoFieldInfo.Cardinality =
                field.isRepeated ? .repeated : (field.isOneofMember || field.type == .message) ? .optional : .singular
            return ProtoFieldInfo(
                name: field.name,
                jsonName: ProtoJSONEncoder.jsonName(field.name),
                number: field.number,
                typeName: typeName == "enumeration" ? "enum" : typeName,
                cardinality: cardinality,
                oneofGroup: field.isOneofMember ? field.quantifierOffset : nil,
                enumValues: enumValues
            )
        }
    }
}
