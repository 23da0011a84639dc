import CProtobufC
import Foundation

/// Writes a protobuf-c message struct as proto3 canonical JSON.
///
/// It walks the protobuf-c descriptors, so every generated message gets JSON without per-message code: field names in
/// lowerCamelCase, enums by name, bytes in base64, 64-bit integers as strings, non-finite floats as "NaN" and
/// "Infinity", fields at their default value left out (members of a oneof and fields with presence are written
/// whenever they are set). With `emitDefaults` (grpcurl's `-emit-defaults`), every field but an unset member of a
/// oneof or a field with presence is written: a default scalar as its value, an empty list as `[]`, an unset message
/// as `null`, as protobuf's own JSON writers do.
enum ProtoJSONEncoder {
    static func object(
        _ message: UnsafeRawPointer,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        emitDefaults: Bool = false
    ) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = ProtoField(descriptor, field: descriptor.pointee.fields + index)
            if field.isRepeated {
                let (count, array) = field.repeated(in: message)
                guard count > 0, let array else {
                    if emitDefaults { members.append((jsonName(field.name), .array([]))) }
                    continue
                }
                let stride = elementStride(field.type)
                let values = (0..<count).map { value(at: array + $0 * stride, field, emitDefaults) }
                members.append((jsonName(field.name), .array(values)))
                continue
            }
            let slot = message + field.offset
            if field.isOneofMember {
                guard field.isSelected(in: message) else { continue }
                if field.type == .message, slot.load(as: UnsafeRawPointer?.self) == nil { continue }
                members.append((jsonName(field.name), value(at: slot, field, emitDefaults)))
            } else if field.type == .message {
                guard slot.load(as: UnsafeRawPointer?.self) != nil else {
                    if emitDefaults { members.append((jsonName(field.name), .null)) }
                    continue
                }
                members.append((jsonName(field.name), value(at: slot, field, emitDefaults)))
            } else if emitDefaults || !isDefault(slot, field) {
                members.append((jsonName(field.name), value(at: slot, field, emitDefaults)))
            }
        }
        return .object(members)
    }

    /// protoc's rule: drop each underscore and upper-case the letter after it.
    static func jsonName(_ protoName: String) -> String {
        var out = ""
        var upperNext = false
        for character in protoName {
            if character == "_" {
                upperNext = true
            } else if upperNext {
                out += character.uppercased()
                upperNext = false
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// Bytes one element takes in a protobuf-c repeated array of `type`.
    static func elementStride(_ type: ProtoFieldType) -> Int {
        switch type {
        case .int64, .sint64, .sfixed64, .uint64,
            .fixed64, .double:
            8
        case .string, .message: MemoryLayout<UnsafeRawPointer>.stride
        case .bytes: MemoryLayout<ProtobufCBinaryData>.stride
        default: 4
        }
    }

    private static func isDefault(_ slot: UnsafeRawPointer, _ field: ProtoField) -> Bool {
        switch field.type {
        case .int64, .sint64, .sfixed64, .uint64,
            .fixed64:
            return slot.load(as: UInt64.self) == 0
        case .double:
            // -0.0 is not the default: its sign would be lost.
            return slot.load(as: UInt64.self) == 0
        case .float:
            return slot.load(as: UInt32.self) == 0
        case .string:
            guard let pointer = slot.load(as: UnsafePointer<CChar>?.self) else { return true }
            return pointer.pointee == 0
        case .bytes:
            return slot.load(as: ProtobufCBinaryData.self).len == 0
        default:
            return slot.load(as: UInt32.self) == 0
        }
    }

    private static func value(at slot: UnsafeRawPointer, _ field: ProtoField, _ emitDefaults: Bool) -> JSONValue {
        switch field.type {
        case .int32, .sint32, .sfixed32:
            return .number(String(slot.load(as: Int32.self)))
        case .uint32, .fixed32:
            return .number(String(slot.load(as: UInt32.self)))
        case .int64, .sint64, .sfixed64:
            return .string(String(slot.load(as: Int64.self)))
        case .uint64, .fixed64:
            return .string(String(slot.load(as: UInt64.self)))
        case .float:
            return floatingPoint(Double(slot.load(as: Float.self)), text: "\(slot.load(as: Float.self))")
        case .double:
            return floatingPoint(slot.load(as: Double.self), text: "\(slot.load(as: Double.self))")
        case .bool:
            return .bool(slot.load(as: protobuf_c_boolean.self) != 0)
        case .enumeration:
            let raw = slot.load(as: Int32.self)
            guard let value = protobuf_c_enum_descriptor_get_value(field.enumDescriptor, raw) else {
                return .number(String(raw))
            }
            return .string(String(cString: value.pointee.name))
        case .string:
            guard let pointer = slot.load(as: UnsafePointer<CChar>?.self) else { return .string("") }
            return .string(String(cString: pointer))
        case .bytes:
            let binary = slot.load(as: ProtobufCBinaryData.self)
            guard binary.len > 0, let data = binary.data else { return .string("") }
            return .string(Data(bytes: data, count: binary.len).base64EncodedString())
        case .message:
            guard let child = slot.load(as: UnsafeRawPointer?.self) else { return .object([]) }
            return object(child, field.messageDescriptor, emitDefaults: emitDefaults)
        default:
            return .null
        }
    }

    /// `text` is Swift's shortest round-tripping form, which writes a whole number as `1.0`; other proto3 JSON
    /// writers (protobuf's own, grpcurl) write `1`, so the `.0` goes and the same value prints the same everywhere.
    /// Exponent forms (`1e+20`) are left as they are: they read back the same in every JSON reader.
    private static func floatingPoint(_ value: Double, text: String) -> JSONValue {
        if value.isNaN { return .string("NaN") }
        if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
        return .number(text.hasSuffix(".0") ? String(text.dropLast(2)) : text)
    }
}
