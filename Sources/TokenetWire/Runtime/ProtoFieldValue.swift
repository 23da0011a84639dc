import CProtobufC
import Foundation

/// A Swift value that maps one-to-one onto the C storage protobuf-c uses for a field of its type.
///
/// protobuf-c lays every field out at a fixed offset in a C struct: scalars in place, strings as `char *`, bytes as
/// `ProtobufCBinaryData`, and repeated fields as a count plus a pointer to an array of the same slots. Each
/// conforming type knows how to read and write one such slot, which is all the generic reader and writer need.
protocol ProtoFieldValue: Sendable {
    /// Bytes one slot of this type takes in a C struct or a repeated array.
    static var cStride: Int { get }
    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) throws -> Self
    /// Like `load`, from a struct that protobuf-c unpacked with malloc and frees right after: a value may take over
    /// the slot's buffer (leaving the slot empty, so protobuf-c does not free it) instead of copying it.
    static func take(from slot: UnsafeMutableRawPointer, field: @autoclosure () -> String) throws -> Self
    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) throws
}

extension ProtoFieldValue {
    static func take(from slot: UnsafeMutableRawPointer, field: @autoclosure () -> String) throws -> Self {
        try load(from: UnsafeRawPointer(slot), field: field())
    }
}

/// Fixed-size scalars are stored bit for bit.
protocol ProtoTrivialFieldValue: ProtoFieldValue, BitwiseCopyable {}

extension ProtoTrivialFieldValue {
    static var cStride: Int { MemoryLayout<Self>.stride }

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) -> Self {
        slot.load(as: Self.self)
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) {
        slot.storeBytes(of: self, as: Self.self)
    }
}

extension Int32: ProtoTrivialFieldValue {}
extension Int64: ProtoTrivialFieldValue {}
extension UInt32: ProtoTrivialFieldValue {}
extension UInt64: ProtoTrivialFieldValue {}
extension Float: ProtoTrivialFieldValue {}
extension Double: ProtoTrivialFieldValue {}

/// `protobuf_c_boolean` is a C `int`.
extension Bool: ProtoFieldValue {
    static var cStride: Int { MemoryLayout<protobuf_c_boolean>.stride }

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) -> Bool {
        slot.load(as: protobuf_c_boolean.self) != 0
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) {
        slot.storeBytes(of: self ? 1 : 0, as: protobuf_c_boolean.self)
    }
}

/// Strings are NUL-terminated `char *`; protobuf-c does not check UTF-8, so reading does.
extension String: ProtoFieldValue {
    static var cStride: Int { MemoryLayout<UnsafeMutablePointer<CChar>?>.stride }

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) throws -> String {
        guard let pointer = slot.load(as: UnsafePointer<CChar>?.self) else { return "" }
        guard let string = String(validatingCString: pointer) else {
            throw WireError(.unreadableValue, "string field \"\(field())\" is not valid UTF-8")
        }
        return string
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) throws {
        let pointer = try arena.cString(self, field: field())
        slot.storeBytes(of: pointer, as: UnsafeMutablePointer<CChar>?.self)
    }
}

/// Bytes are a `ProtobufCBinaryData` (length and pointer).
extension Data: ProtoFieldValue {
    static var cStride: Int { MemoryLayout<ProtobufCBinaryData>.stride }

    /// Below this size a copy is cheaper than a `Data` that owns protobuf-c's buffer and frees it.
    static let takeOverThreshold = 64

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) -> Data {
        let binary = slot.load(as: ProtobufCBinaryData.self)
        guard binary.len > 0, let data = binary.data else { return Data() }
        return Data(bytes: data, count: binary.len)
    }

    /// protobuf-c's unpack copied the bytes into a buffer of their own from `malloc`; the `Data` takes it over and
    /// frees it, and the slot is cleared so `protobuf_c_message_free_unpacked` leaves it alone.
    static func take(from slot: UnsafeMutableRawPointer, field: @autoclosure () -> String) -> Data {
        let binary = slot.load(as: ProtobufCBinaryData.self)
        guard binary.len >= takeOverThreshold, let data = binary.data else {
            return load(from: UnsafeRawPointer(slot), field: field())
        }
        slot.storeBytes(of: ProtobufCBinaryData(len: 0, data: nil), as: ProtobufCBinaryData.self)
        return Data(bytesNoCopy: data, count: binary.len, deallocator: .free)
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) {
        guard !isEmpty else {
            slot.storeBytes(of: ProtobufCBinaryData(len: 0, data: nil), as: ProtobufCBinaryData.self)
            return
        }
        let bytes = arena.bytes(of: self)
        slot.storeBytes(of: ProtobufCBinaryData(len: count, data: bytes), as: ProtobufCBinaryData.self)
    }
}

/// Generated enums are stored as their C `int` raw value; unknown values survive a round trip.
extension ProtoEnum {
    static var cStride: Int { MemoryLayout<Int32>.stride }

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) -> Self {
        Self(rawValue: slot.load(as: Int32.self))
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) {
        slot.storeBytes(of: rawValue, as: Int32.self)
    }
}
