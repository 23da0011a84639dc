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
    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) throws
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
            throw WireError(.invalidMessage, "string field \"\(field())\" is not valid UTF-8")
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

    static func load(from slot: UnsafeRawPointer, field: @autoclosure () -> String) -> Data {
        let binary = slot.load(as: ProtobufCBinaryData.self)
        guard binary.len > 0, let data = binary.data else { return Data() }
        return Data(bytes: data, count: binary.len)
    }

    func store(to slot: UnsafeMutableRawPointer, arena: ProtoArena, field: @autoclosure () -> String) {
        let copy = withUnsafeBytes { arena.copy($0) }
        slot.storeBytes(of: ProtobufCBinaryData(len: copy == nil ? 0 : count, data: copy), as: ProtobufCBinaryData.self)
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
