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

    /// What the field's values are, so a describer knows whether `typeName` names a message or an enum.
    public enum Kind: String, Hashable, Sendable {
        case scalar
        case message
        case enumeration
    }

    /// The name in the `.proto` file, for example `stream_id`.
    public let name: String
    /// The proto3 JSON name, for example `streamId`.
    public let jsonName: String
    public let number: UInt32
    /// The proto type: `uint32`, `string`, `bytes`, …, or the fully-qualified message or enum name.
    public let typeName: String
    public let kind: Kind
    public let cardinality: Cardinality
    /// Whether the field is a member of a oneof; members of one oneof share `oneofGroup`.
    public let oneofGroup: Int?
    /// The position of the field's oneof among the message's oneofs with more than one member, in the order of their
    /// lowest field numbers; nil outside a oneof and for a field alone in its oneof.
    ///
    /// A single-member oneof is how a field gets presence here (protoc-c has no proto3 `optional`), so describing it
    /// as an optional field is both what it means and what a client must know to write it in JSON. protobuf-c records
    /// no oneof names, so this position is all a describer can show.
    public let oneofIndex: Int?
    /// The declared values of an enum field, in number order (protobuf-c keeps no declaration order).
    public let enumValues: [(name: String, number: Int32)]

    public static func == (lhs: ProtoFieldInfo, rhs: ProtoFieldInfo) -> Bool {
        lhs.name == rhs.name && lhs.number == rhs.number && lhs.typeName == rhs.typeName
            && lhs.kind == rhs.kind && lhs.cardinality == rhs.cardinality && lhs.oneofGroup == rhs.oneofGroup
            && lhs.oneofIndex == rhs.oneofIndex && lhs.enumValues.elementsEqual(rhs.enumValues, by: ==)
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
        let fields = (0..<Int(pointer.pointee.n_fields)).map { ProtoField(pointer, field: pointer.pointee.fields + $0) }
        // Oneofs are told apart by the shared offset of their case member; count each one's members.
        var members: [Int: Int] = [:]
        for field in fields where field.isOneofMember { members[field.quantifierOffset, default: 0] += 1 }
        let sharedGroups = fields.filter { $0.isOneofMember && members[$0.quantifierOffset, default: 0] > 1 }
            .sorted { $0.number < $1.number }.map(\.quantifierOffset)
        var oneofIndexes: [Int: Int] = [:]
        for group in sharedGroups where oneofIndexes[group] == nil { oneofIndexes[group] = oneofIndexes.count }
        return fields.map { field in
            let typeName: String
            let kind: ProtoFieldInfo.Kind
            var enumValues: [(name: String, number: Int32)] = []
            switch field.type {
            case .message:
                typeName = String(cString: field.messageDescriptor.pointee.name)
                kind = .message
            case .enumeration:
                let descriptor = field.enumDescriptor.pointee
                typeName = String(cString: descriptor.name)
                kind = .enumeration
                enumValues = (0..<Int(descriptor.n_values)).map {
                    (String(cString: descriptor.values[$0].name), descriptor.values[$0].value)
                }
            case .unsupported:
                typeName = "unsupported"
                kind = .scalar
            default:
                typeName = "\(field.type)"
                kind = .scalar
            }
            let cardinality: ProtoFieldInfo.Cardinality =
                field.isRepeated ? .repeated : (field.isOneofMember || field.type == .message) ? .optional : .singular
            return ProtoFieldInfo(
                name: field.name,
                jsonName: ProtoJSONEncoder.jsonName(field.name),
                number: field.number,
                typeName: typeName,
                kind: kind,
                cardinality: cardinality,
                oneofGroup: field.isOneofMember ? field.quantifierOffset : nil,
                oneofIndex: field.isOneofMember ? oneofIndexes[field.quantifierOffset] : nil,
                enumValues: enumValues
            )
        }
    }
}
