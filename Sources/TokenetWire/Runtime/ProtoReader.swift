import CProtobufC

/// Reads Swift values out of one protobuf-c message struct. Generated `init(_protoReader:)` initializers drive it.
///
/// The struct may come from `protobuf_c_message_unpack` or from a `_ProtoWriter` (the JSON decoder builds one);
/// the reader never frees anything.
public struct _ProtoReader {
    let message: UnsafeRawPointer
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    /// Whether the struct tree came from `protobuf_c_message_unpack` with the default (malloc) allocator and is
    /// freed right after reading: `bytes` fields may then take over protobuf-c's buffer instead of copying it, which
    /// spares one copy of every payload received.
    let takesBuffers: Bool

    init(message: UnsafeRawPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, takesBuffers: Bool = false) {
        self.message = message
        self.descriptor = descriptor
        self.takesBuffers = takesBuffers
    }

    /// A plain proto3 field; its zero value when not set.
    func read<Value: ProtoFieldValue>(_ number: UInt32) throws -> Value {
        let field = ProtoField(descriptor, number)
        return try load(field)
    }

    /// A field with presence: a oneof member, or the single field of a presence (`_name`) oneof.
    func readIfPresent<Value: ProtoFieldValue>(_ number: UInt32) throws -> Value? {
        let field = ProtoField(descriptor, number)
        guard field.isSelected(in: message) else { return nil }
        return try load(field) as Value
    }

    private func load<Value: ProtoFieldValue>(_ field: ProtoField) throws -> Value {
        if takesBuffers {
            return try Value.take(
                from: UnsafeMutableRawPointer(mutating: message + field.offset), field: field.qualifiedName)
        }
        return try Value.load(from: message + field.offset, field: field.qualifiedName)
    }

    /// The number of the selected member of the oneof that field `number` belongs to; 0 when none is.
    func oneofCase(_ number: UInt32) -> UInt32 {
        let field = ProtoField(descriptor, number)
        return (message + field.quantifierOffset).load(as: UInt32.self)
    }

    /// A message field (or a message member of a oneof); nil when absent.
    func readMessage<Message: ProtoMessage>(_ number: UInt32) throws -> Message? {
        let field = ProtoField(descriptor, number)
        guard field.isSelected(in: message),
            let child = (message + field.offset).load(as: UnsafeRawPointer?.self)
        else { return nil }
        return try Message(
            _protoReader: _ProtoReader(
                message: child, descriptor: Message._protobufC.pointer, takesBuffers: takesBuffers)
        )
    }

    func readRepeated<Value: ProtoFieldValue>(_ number: UInt32) throws -> [Value] {
        let field = ProtoField(descriptor, number)
        let (count, array) = field.repeated(in: message)
        guard count > 0, let array else { return [] }
        var values: [Value] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            values.append(try Value.load(from: array + index * Value.cStride, field: field.qualifiedName))
        }
        return values
    }

    func readRepeatedMessages<Message: ProtoMessage>(_ number: UInt32) throws -> [Message] {
        let field = ProtoField(descriptor, number)
        let (count, array) = field.repeated(in: message)
        guard count > 0, let array else { return [] }
        let childDescriptor = Message._protobufC.pointer
        var values: [Message] = []
        values.reserveCapacity(count)
        for index in 0..<count {
            let child = (array + index * MemoryLayout<UnsafeRawPointer>.stride).load(as: UnsafeRawPointer.self)
            let reader = _ProtoReader(message: child, descriptor: childDescriptor, takesBuffers: takesBuffers)
            values.append(try Message(_protoReader: reader))
        }
        return values
    }
}
