import CProtobufC

/// Where serialized bytes stop being a message of a given type. protobuf-c's unpack says only that it failed, and
/// "the bytes are not a valid … message" left a person decoding a capture (`tokenet decode --type`) or reading a
/// node's refusal with nothing to look at; this walk names the byte and the field. It runs only after protobuf-c
/// refused the bytes, so it costs a valid message nothing.
enum ProtoMalformationScan {
    /// Nesting deeper than this is not walked further, as in `ProtoNULScan`.
    static let maximumDepth = 64

    /// What is wrong with `bytes` as a message of `descriptor`, starting "at byte N", or nil when the walk finds
    /// nothing (protobuf-c refused them for a reason this walk does not check).
    static func problem(
        in bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> String? {
        var reader = ProtoWireReader(bytes: bytes.bindMemory(to: UInt8.self))
        return scan(&reader, end: bytes.count, descriptor: descriptor, depth: 0)
    }

    private static func scan(
        _ reader: inout ProtoWireReader, end: Int, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int
    ) -> String? {
        while reader.position < end {
            let start = reader.position
            guard let key = reader.varint(end: end) else {
                return "at byte \(start), a field's key runs past the end of its message"
            }
            let number = key >> 3
            let wireType = key & 7
            guard number != 0, number <= 536_870_911 else {
                return "at byte \(start), a field is numbered \(number), which no message field can be"
            }
            let field = protobuf_c_message_descriptor_get_field(descriptor, UInt32(number)).map {
                ProtoField(descriptor, field: $0)
            }
            let name = field.map { "field \($0.qualifiedName) (\(number))" } ?? "field \(number)"
            if let field, let expected = wireTypes(of: field), !expected.contains(wireType) {
                return "at byte \(start), \(name) comes with wire type \(wireType), not the \(wireTypeNames(expected)) "
                    + "its type (\(field.type)) takes"
            }
            switch wireType {
            case 0:
                guard reader.varint(end: end) != nil else {
                    return "at byte \(start), the varint of \(name) runs past the end of its message"
                }
            case 1, 5:
                let width = wireType == 1 ? 8 : 4
                guard reader.skip(width, end: end) else {
                    return "at byte \(start), the \(width)-byte value of \(name) runs past the end of its message "
                        + "(\(end - reader.position) bytes left)"
                }
            case 2:
                guard let length = reader.varint(end: end) else {
                    return "at byte \(start), the length of \(name) runs past the end of its message"
                }
                let left = end - reader.position
                guard length <= UInt64(left) else {
                    return "at byte \(start), \(name) claims \(length) bytes where \(left) are left (cut short?)"
                }
                let valueEnd = reader.position + Int(length)
                if let field, field.type == .message, depth < maximumDepth {
                    var inner = reader
                    if let found = scan(&inner, end: valueEnd, descriptor: field.messageDescriptor, depth: depth + 1) {
                        return found
                    }
                }
                reader.position = valueEnd
            default:
                return "at byte \(start), \(name) comes with wire type \(wireType), which Tokenet does not read"
            }
        }
        return nil
    }

    /// The wire types a field of this type may come with: its own, and length-delimited for a packed repeated
    /// number. Nil for a type this walk does not know.
    private static func wireTypes(of field: ProtoField) -> Set<UInt64>? {
        let own: UInt64
        switch field.type {
        case .int32, .sint32, .int64, .sint64, .uint32, .uint64, .bool, .enumeration: own = 0
        case .sfixed64, .fixed64, .double: own = 1
        case .sfixed32, .fixed32, .float: own = 5
        case .string, .bytes, .message: return [2]
        case .unsupported: return nil
        }
        return field.isRepeated ? [own, 2] : [own]
    }

    private static func wireTypeNames(_ types: Set<UInt64>) -> String {
        let names: [UInt64: String] = [0: "varint (0)", 1: "64-bit (1)", 2: "length-delimited (2)", 5: "32-bit (5)"]
        return types.sorted().compactMap { names[$0] }.joined(separator: " or ")
    }
}
