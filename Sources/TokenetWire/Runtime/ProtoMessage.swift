import CProtobufC
import Foundation

/// A message generated from `Protos/` by `Tools/gen-protos`.
///
/// Generated messages are plain value types. Their bytes are produced and parsed by protobuf-c (through the
/// `_ProtoWriter` and `_ProtoReader` bridge), never by a hand-written encoder, and their canonical JSON is driven by
/// the same protobuf-c descriptors.
public protocol ProtoMessage: Hashable, Sendable {
    /// Fully-qualified proto name, for example `tokenet.wire.v1.Frame`.
    static var protoName: String { get }
    /// The protobuf-c descriptor of the message. Internal plumbing for generated code.
    static var _protobufC: _ProtoDescriptor { get }
    /// The name of the oneof each oneof member belongs to, by field number; empty without oneofs.
    static var protoOneofNames: [UInt32: String] { get }
    init()
    /// Reads the message from a protobuf-c struct. Internal plumbing for generated code.
    init(_protoReader reader: _ProtoReader) throws
    /// Writes the message into a protobuf-c struct. Internal plumbing for generated code.
    func _protoWrite(to writer: inout _ProtoWriter) throws
}

/// The protobuf-c descriptor of a generated message, kept opaque so C types stay out of public APIs.
public struct _ProtoDescriptor: @unchecked Sendable {
    let pointer: UnsafePointer<ProtobufCMessageDescriptor>

    init(_ pointer: UnsafePointer<ProtobufCMessageDescriptor>) {
        self.pointer = pointer
    }

    /// Fully-qualified proto name as recorded by protobuf-c.
    public var protoName: String { String(cString: pointer.pointee.name) }
}

extension ProtoMessage {
    public static var protoOneofNames: [UInt32: String] { [:] }

    /// The protobuf binary serialization of the message.
    ///
    /// Throws `WireError.unencodableValue` when a string holds a NUL character, which protobuf-c cannot carry.
    public func serializedBytes() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try appendSerializedBytes(to: &bytes)
        return bytes
    }

    /// The protobuf binary serialization as `Data`, packed straight into the storage the `Data` keeps.
    public func serializedData() throws -> Data {
        try withPackable { $0.serializedData() }
    }

    /// Appends the serialization to `buffer`, so a frame can be built without an intermediate copy.
    public func appendSerializedBytes(to buffer: inout [UInt8]) throws {
        try withCMessage { message in
            let size = protobuf_c_message_get_packed_size(message)
            guard size > 0 else { return }
            PackableMessage(message: message).append(size, to: &buffer)
        }
    }

    /// Builds the message's protobuf-c form once and hands it to `body`, which can then pack it where it wants
    /// (`FrameEncoder.encodeMessage`) without building it again; every way serializing can fail has been checked
    /// by then. The `PackableMessage` is valid only inside `body`.
    ///
    /// Throws `WireError.unencodableValue` when a string holds a NUL character, which protobuf-c cannot carry.
    public func withPackable<Result>(_ body: (PackableMessage) throws -> Result) throws -> Result {
        try withCMessage { message in try body(PackableMessage(message: message)) }
    }

    /// The serialized size in bytes.
    public func serializedSize() throws -> Int {
        try withCMessage { protobuf_c_message_get_packed_size($0) }
    }

    /// Parses the protobuf binary serialization of the message.
    ///
    /// Throws `WireError.invalidMessage` for bytes that are not a valid message of this type or that carry more
    /// unknown fields than `ProtoUnknownFieldScan` lets through, and
    /// `WireError.unreadableValue` for a string that holds a NUL character, which protobuf-c would cut short (see
    /// `ProtoNULScan`), or that is not UTF-8.
    public init(serializedBytes bytes: some ContiguousBytes) throws {
        let descriptor = Self._protobufC.pointer
        if bytes.withUnsafeBytes({ ProtoUnknownFieldScan.exceedsLimit($0, descriptor: descriptor) }) {
            throw WireError(
                .invalidMessage,
                "the bytes hold more than \(ProtoUnknownFieldScan.maximumUnknownFields) fields that \(Self.protoName) "
                    + "does not have, the most Tokenet reads in one message")
        }
        var fieldWithNUL: String?
        var malformation: String?
        let unpacked: UnsafeMutablePointer<ProtobufCMessage>? = bytes.withUnsafeBytes { raw in
            // protobuf-c reads `len` bytes from `data`; an empty message needs a valid pointer, not nil.
            var empty: UInt8 = 0
            let unpacked = withUnsafePointer(to: &empty) { fallback in
                let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? fallback
                return protobuf_c_message_unpack(descriptor, nil, raw.count, base)
            }
            if unpacked != nil {
                fieldWithNUL = ProtoNULScan.stringFieldWithNUL(in: raw, descriptor: descriptor)
            } else {
                malformation = ProtoMalformationScan.problem(in: raw, descriptor: descriptor)
            }
            return unpacked
        }
        guard let unpacked else {
            throw WireError(
                .invalidMessage,
                "the bytes are not a valid \(Self.protoName) message" + (malformation.map { ": \($0)" } ?? ""))
        }
        defer { protobuf_c_message_free_unpacked(unpacked, nil) }
        if let fieldWithNUL {
            throw WireError(
                .unreadableValue, "string field \"\(fieldWithNUL)\" holds a NUL character, which Tokenet cannot carry")
        }
        try self.init(
            _protoReader: _ProtoReader(message: UnsafeRawPointer(unpacked), descriptor: descriptor, takesBuffers: true)
        )
    }

    /// Builds the protobuf-c struct tree for this value and hands it to `body`; it is freed when `body` returns.
    func withCMessage<Result>(_ body: (UnsafePointer<ProtobufCMessage>) throws -> Result) throws -> Result {
        try withUnsafeTemporaryAllocation(byteCount: ProtoArena.scratchSize, alignment: 16) { scratch in
            let arena = ProtoArena(scratch: scratch)
            var writer = _ProtoWriter(descriptor: Self._protobufC.pointer, arena: arena)
            try _protoWrite(to: &writer)
            return try withExtendedLifetime(arena) {
                try body(writer.message.assumingMemoryBound(to: ProtobufCMessage.self))
            }
        }
    }
}

/// A message in protobuf-c form, ready to be packed: see `ProtoMessage.withPackable`.
public struct PackableMessage {
    private let message: UnsafePointer<ProtobufCMessage>

    init(message: UnsafePointer<ProtobufCMessage>) {
        self.message = message
    }

    /// The serialized size in bytes.
    public var packedSize: Int { protobuf_c_message_get_packed_size(message) }

    /// Packs the message into `storage`, which has room for `packedSize` bytes.
    func pack(into storage: UnsafeMutablePointer<UInt8>) {
        let packed = protobuf_c_message_pack(message, storage)
        precondition(packed == packedSize, "protobuf-c packed \(packed) bytes, announced \(packedSize)")
    }

    /// Appends the serialization, `size` (= `packedSize`) bytes, to `buffer`.
    ///
    /// A Swift array cannot grow without initializing what it adds, so packing in place needs the room zeroed
    /// first. A small message is packed that way (zeroing a few hundred bytes costs less than anything else); a
    /// large one goes through protobuf-c's buffer interface instead, which hands over each field's bytes to be
    /// appended (its data with one copy, straight from the field), so its room is never zeroed: that zeroing was
    /// 1.6–2.1 % of each side's samples with 16 KiB messages.
    func append(_ size: Int, to buffer: inout [UInt8], threshold: Int = appendThreshold) {
        let start = buffer.count
        if size < threshold {
            buffer.appendZeros(size)
            buffer.withUnsafeMutableBufferPointer { bytes in pack(into: bytes.baseAddress! + start) }
            return
        }
        let packed = withUnsafeMutablePointer(to: &buffer) { target in
            // A ProtobufCBuffer followed by the address of the array: the callback finds its array behind the
            // buffer it is given.
            withUnsafeTemporaryAllocation(byteCount: Self.sinkSize, alignment: 16) { sink in
                let base = sink.baseAddress!
                base.initializeMemory(as: ProtobufCBuffer.self, to: ProtobufCBuffer(append: appendToArray))
                (base + Self.targetOffset).storeBytes(
                    of: UnsafeMutableRawPointer(target), as: UnsafeMutableRawPointer.self)
                return protobuf_c_message_pack_to_buffer(message, base.assumingMemoryBound(to: ProtobufCBuffer.self))
            }
        }
        precondition(
            packed == size && buffer.count == start + size, "protobuf-c packed \(packed) bytes, announced \(size)")
    }

    /// Messages from this size on are appended through protobuf-c's buffer interface (see `append`).
    static let appendThreshold = 1024
    private static let targetOffset = MemoryLayout<ProtobufCBuffer>.stride
    private static let sinkSize = targetOffset + MemoryLayout<UnsafeMutableRawPointer>.stride

    /// The serialization as `Data`, for a message that has to wait (flow control) or go elsewhere.
    public func serializedData() -> Data {
        let size = packedSize
        guard size > 0 else { return Data() }
        guard let storage = malloc(size) else { fatalError("Tokenet: out of memory allocating \(size) bytes") }
        pack(into: storage.assumingMemoryBound(to: UInt8.self))
        return Data(bytesNoCopy: storage, count: size, deallocator: .free)
    }
}

/// protobuf-c's `ProtobufCBuffer.append` for `PackableMessage.append`: appends `count` bytes to the array whose
/// address follows the buffer.
private func appendToArray(_ sink: UnsafeMutablePointer<ProtobufCBuffer>?, _ count: Int, _ data: UnsafePointer<UInt8>?)
{
    guard let sink, count > 0 else { return }
    let target = (UnsafeMutableRawPointer(sink) + MemoryLayout<ProtobufCBuffer>.stride)
        .load(as: UnsafeMutableRawPointer.self).assumingMemoryBound(to: [UInt8].self)
    target.pointee.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
}

extension Array where Element == UInt8 {
    /// Zeros to append from: appending a slice of an array is one `memcpy`, while appending `repeatElement(0, …)`
    /// runs an element-by-element loop that cost more than the copy it made room for.
    private static let zeros = [UInt8](repeating: 0, count: 16 * 1024)

    /// Appends `count` zero bytes.
    mutating func appendZeros(_ count: Int) {
        // No reserveCapacity: an exact reservation per frame would regrow (and copy) the buffer every time.
        var left = count
        while left > 0 {
            let piece = Swift.min(left, Self.zeros.count)
            append(contentsOf: Self.zeros[..<piece])
            left -= piece
        }
    }
}
