import CProtobufC

/// Fills one protobuf-c message struct from Swift values. Generated `_protoWrite(to:)` methods drive it.
///
/// Fields are addressed by number; the protobuf-c field descriptor says where the slot is, where its count or oneof
/// case lives, and which flags apply. Everything allocated belongs to the arena of the whole encode.
public struct _ProtoWriter {
    let message: UnsafeMutableRawPointer
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    let arena: ProtoArena

    init(descriptor: UnsafePointer<ProtobufCMessageDescriptor>, arena: ProtoArena) {
        self.descriptor = descriptor
        self.arena = arena
        self.message = arena.allocate(byteCount: descriptor.pointee.sizeof_message)
        protobuf_c_message_init(descriptor, message)
    }

    /// A singular field: a plain proto3 field, a member of a oneof, or a presence (`_name`) oneof.
    mutating func write<Value: ProtoFieldValue>(_ number: UInt32, _ value: Value) throws {
        let field = ProtoField(descriptor, number)
        try value.store(to: message + field.offset, arena: arena, field: field.qualifiedName)
        field.markPresent(in: message)
    }

    /// A singular message field.
    mutating func write<Message: ProtoMessage>(_ number: UInt32, message value: Message) throws {
        let field = ProtoField(descriptor, number)
        var child = _ProtoWriter(descriptor: Message._protobufC.pointer, arena: arena)
        try value._protoWrite(to: &child)
        (message + field.offset).storeBytes(of: child.message, as: UnsafeMutableRawPointer?.self)
        field.markPresent(in: message)
    }

    /// A repeated scalar, string, bytes or enum field.
    mutating func write<Value: ProtoFieldValue>(_ number: UInt32, repeated values: [Value]) throws {
        guard !values.isEmpty else { return }
        let field = ProtoField(descriptor, number)
        let array = arena.allocate(byteCount: Value.cStride * values.count)
        for (index, value) in values.enumerated() {
            try value.store(to: array + index * Value.cStride, arena: arena, field: field.qualifiedName)
        }
        field.storeRepeated(array, count: values.count, in: message)
    }

    /// A repeated message field.
    mutating func write<Message: ProtoMessage>(_ number: UInt32, repeatedMessages values: [Message]) throws {
        guard !values.isEmpty else { return }
        let field = ProtoField(descriptor, number)
        let stride = MemoryLayout<UnsafeMutableRawPointer>.stride
        let array = arena.allocate(byteCount: stride * values.count)
        for (index, value) in values.enumerated() {
            var child = _ProtoWriter(descriptor: Message._protobufC.pointer, arena: arena)
            try value._protoWrite(to: &child)
            (array + index * stride).storeBytes(of: child.message, as: UnsafeMutableRawPointer.self)
        }
        field.storeRepeated(array, count: values.count, in: message)
    }
}

/// One field of a protobuf-c message descriptor, with the slot arithmetic the reader and writer share.
struct ProtoField {
    let pointer: UnsafePointer<ProtobufCFieldDescriptor>
    let message: UnsafePointer<ProtobufCMessageDescriptor>

    init(_ message: UnsafePointer<ProtobufCMessageDescriptor>, _ number: UInt32) {
        guard let pointer = protobuf_c_message_descriptor_get_field(message, number) else {
            // Generated code and its descriptors come from the same .proto files; a mismatch is a build defect.
            preconditionFailure("field \(number) is not part of \(String(cString: message.pointee.name))")
        }
        self.pointer = pointer
        self.message = message
    }

    init(_ message: UnsafePointer<ProtobufCMessageDescriptor>, field pointer: UnsafePointer<ProtobufCFieldDescriptor>) {
        self.pointer = pointer
        self.message = message
    }

    var number: UInt32 { pointer.pointee.id }
    var name: String { String(cString: pointer.pointee.name) }
    var qualifiedName: String { "\(String(cString: message.pointee.name)).\(name)" }
    var type: ProtoFieldType { ProtoFieldType(rawValue: pointer.pointee.type.rawValue) ?? .unsupported }
    var offset: Int { Int(pointer.pointee.offset) }
    /// `PROTOBUF_C_LABEL_REPEATED`; Swift does not import protobuf-c's enum constants.
    var isRepeated: Bool { pointer.pointee.label.rawValue == 2 }
    /// `PROTOBUF_C_FIELD_FLAG_ONEOF`.
    var isOneofMember: Bool { pointer.pointee.flags & (1 << 2) != 0 }
    var quantifierOffset: Int { Int(pointer.pointee.quantifier_offset) }

    /// The message descriptor of a message-typed field.
    var messageDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        pointer.pointee.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
    }

    /// The enum descriptor of an enum-typed field.
    var enumDescriptor: UnsafePointer<ProtobufCEnumDescriptor> {
        pointer.pointee.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
    }

    /// Selects this field in its oneof; plain fields need no marker.
    func markPresent(in message: UnsafeMutableRawPointer) {
        if isOneofMember {
            (message + quantifierOffset).storeBytes(of: number, as: UInt32.self)
        }
    }

    /// Whether a oneof member is the selected one (always true for fields outside a oneof).
    func isSelected(in message: UnsafeRawPointer) -> Bool {
        !isOneofMember || (message + quantifierOffset).load(as: UInt32.self) == number
    }

    func storeRepeated(_ array: UnsafeMutableRawPointer, count: Int, in message: UnsafeMutableRawPointer) {
        (message + quantifierOffset).storeBytes(of: count, as: Int.self)
        (message + offset).storeBytes(of: array, as: UnsafeMutableRawPointer?.self)
    }

    /// The element count and array of a repeated field.
    func repeated(in message: UnsafeRawPointer) -> (count: Int, array: UnsafeRawPointer?) {
        let count = (message + quantifierOffset).load(as: Int.self)
        return (count, (message + offset).load(as: UnsafeRawPointer?.self))
    }
}

/// protobuf-c's `ProtobufCType`, whose constants Swift does not import, in protobuf-c's order.
enum ProtoFieldType: UInt32 {
    case int32, sint32, sfixed32, int64, sint64, sfixed64, uint32, fixed32, uint64, fixed64
    case float, double, bool, enumeration, string, bytes, message
    case unsupported = 0xFFFF_FFFF
}
