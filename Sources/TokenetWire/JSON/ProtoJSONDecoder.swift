import CProtobufC
import Foundation

/// Builds a protobuf-c message struct from proto3 JSON, following the protobuf-c descriptors.
///
/// Accepts what the proto3 JSON mapping allows: either the lowerCamelCase or the original field name, integers as
/// numbers or strings, enums by name or number, bytes in standard or URL-safe base64 with or without padding, and
/// `null` for "default". Anything else is refused with the field's qualified name: an unknown field, a field given
/// twice, two members of one oneof, a value of the wrong kind or out of range.
struct ProtoJSONDecoder {
    let arena: ProtoArena

    func message(
        _ json: JSONValue,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) throws -> UnsafeMutableRawPointer {
        let messageName = String(cString: descriptor.pointee.name)
        guard case .object(let members) = json else {
            throw WireError(.invalidJSON, "expected an object for \(messageName), found \(json.kindName)")
        }
        let message = arena.allocate(byteCount: descriptor.pointee.sizeof_message)
        protobuf_c_message_init(descriptor, message)
        var seen: Set<UInt32> = []
        var oneofOwners: [Int: String] = [:]
        for (key, value) in members {
            guard let field = Self.field(named: key, in: descriptor) else {
                throw WireError(
                    .invalidJSON,
                    "unknown field \"\(key)\" in \(messageName)\(Self.fieldHint(for: key, in: descriptor))")
            }
            guard seen.insert(field.number).inserted else {
                throw WireError(.invalidJSON, "field \"\(key)\" appears twice in \(messageName)")
            }
            if value == .null { continue }
            if field.isOneofMember {
                if let other = oneofOwners[field.quantifierOffset] {
                    throw WireError(
                        .invalidJSON,
                        "fields \"\(other)\" and \"\(key)\" of \(messageName) belong to one oneof; set only one"
                    )
                }
                oneofOwners[field.quantifierOffset] = key
            }
            if field.isRepeated {
                guard case .array(let elements) = value else {
                    throw WireError(.invalidJSON, "\(field.qualifiedName): expected an array, found \(value.kindName)")
                }
                guard !elements.isEmpty else { continue }
                let stride = ProtoJSONEncoder.elementStride(field.type)
                let array = arena.allocate(byteCount: stride * elements.count)
                for (index, element) in elements.enumerated() {
                    try store(element, at: array + index * stride, field, element: index)
                }
                field.storeRepeated(array, count: elements.count, in: message)
            } else {
                try store(value, at: message + field.offset, field)
                field.markPresent(in: message)
            }
        }
        return message
    }

    /// The field named `key` (its proto or JSON name). protobuf-c looks names up as C strings, which end at a NUL:
    /// a key with one (`"f_int32\u0000x"`) named no field, but was taken for the field named by the part before it.
    /// What to write instead of the unknown field `key`: the field it is close to (`reason` for `reasonCode`,
    /// `stauts` for `status`), or the message's fields when none is, or nothing for a message without fields. The
    /// enum's values were listed for a wrong value, and a wrong field name sent the person to the .proto.
    static func fieldHint(for key: String, in descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> String {
        let names = (0..<Int(descriptor.pointee.n_fields)).map {
            ProtoJSONEncoder.jsonName(ProtoField(descriptor, field: descriptor.pointee.fields + $0).name)
        }
        guard !names.isEmpty else { return " (it has no fields)" }
        let typed = key.lowercased()
        // Part of a name first (`reason` for `reasonCode`), else the names fewest slips away.
        var close = names.filter { name in
            let lowered = name.lowercased()
            return typed.count >= 3 && (lowered.hasPrefix(typed) || typed.hasPrefix(lowered))
        }
        if close.isEmpty { close = EditDistance.closest(to: key, among: names) }
        if !close.isEmpty {
            return "; did you mean " + close.map { "\"\($0)\"" }.joined(separator: " or ") + "?"
        }
        let shown = names.prefix(24).joined(separator: ", ")
        return " (its fields: \(shown)\(names.count > 24 ? ", …" : ""))"
    }

    static func field(named key: String, in descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> ProtoField? {
        guard !key.utf8.contains(0) else { return nil }
        if let pointer = protobuf_c_message_descriptor_get_field_by_name(descriptor, key) {
            return ProtoField(descriptor, field: pointer)
        }
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = ProtoField(descriptor, field: descriptor.pointee.fields + index)
            if ProtoJSONEncoder.jsonName(field.name) == key { return field }
        }
        return nil
    }

    /// `element` is the index of `value` in a repeated field's array, named with the field when the value is
    /// refused (`subscribers[2]`): which of the elements was wrong was not said.
    private func store(
        _ value: JSONValue, at slot: UnsafeMutableRawPointer, _ field: ProtoField, element: Int? = nil
    ) throws {
        let name = field.qualifiedName + (element.map { "[\($0)]" } ?? "")
        switch field.type {
        case .int32, .sint32, .sfixed32:
            slot.storeBytes(of: try Self.integer(value, Int32.self, name), as: Int32.self)
        case .uint32, .fixed32:
            slot.storeBytes(of: try Self.integer(value, UInt32.self, name), as: UInt32.self)
        case .int64, .sint64, .sfixed64:
            slot.storeBytes(of: try Self.integer(value, Int64.self, name), as: Int64.self)
        case .uint64, .fixed64:
            slot.storeBytes(of: try Self.integer(value, UInt64.self, name), as: UInt64.self)
        case .double:
            slot.storeBytes(of: try Self.floatingPoint(value, name), as: Double.self)
        case .float:
            let double = try Self.floatingPoint(value, name)
            let float = Float(double)
            guard double.isNaN || double.isInfinite || float.isFinite else {
                throw WireError(.invalidJSON, "\(name): \(double) is out of range for a float")
            }
            slot.storeBytes(of: float, as: Float.self)
        case .bool:
            guard case .bool(let bool) = value else {
                throw WireError(.invalidJSON, "\(name): expected true or false, found \(value.kindName)")
            }
            bool.store(to: slot, arena: arena, field: name)
        case .string:
            guard case .string(let string) = value else {
                throw WireError(.invalidJSON, "\(name): expected a string, found \(value.kindName)")
            }
            // protobuf-c keeps strings NUL-terminated, so none can hold one; said as what is wrong with the JSON
            // (invalidJSON, as for any text that does not fit), not as an encoding failure.
            guard !string.utf8.contains(0) else {
                throw WireError(.invalidJSON, "\(name): a string cannot hold a NUL character (\\u0000)")
            }
            try string.store(to: slot, arena: arena, field: name)
        case .bytes:
            guard case .string(let text) = value else {
                throw WireError(.invalidJSON, "\(name): expected base64 text, found \(value.kindName)")
            }
            guard let data = ProtoJSONBase64.decode(text) else {
                throw WireError(
                    .invalidJSON, "\(name): expected base64 text: \(ProtoJSONBase64.problem(with: text))")
            }
            data.store(to: slot, arena: arena, field: name)
        case .enumeration:
            slot.storeBytes(of: try enumValue(value, field, name), as: Int32.self)
        case .message:
            // Named here with the field: the message's own check names only its type, which several fields (or the
            // elements of a repeated one) may share.
            guard case .object = value else {
                let type = String(cString: field.messageDescriptor.pointee.name)
                throw WireError(.invalidJSON, "\(name): expected an object for \(type), found \(value.kindName)")
            }
            let child = try message(value, field.messageDescriptor)
            slot.storeBytes(of: child, as: UnsafeMutableRawPointer?.self)
        default:
            throw WireError(.invalidJSON, "\(name): unsupported field type")
        }
    }

    private func enumValue(_ value: JSONValue, _ field: ProtoField, _ fieldName: String) throws -> Int32 {
        let enumName = String(cString: field.enumDescriptor.pointee.name)
        switch value {
        case .string(let name):
            // A C string ends at a NUL: "COLOR_RED\u0000x" would be found as COLOR_RED.
            guard !name.utf8.contains(0),
                let found = protobuf_c_enum_descriptor_get_value_by_name(field.enumDescriptor, name)
            else {
                throw WireError(
                    .invalidJSON,
                    "\(fieldName): \"\(name)\" is not a value of \(enumName)\(Self.values(of: field.enumDescriptor))")
            }
            return found.pointee.value
        case .number:
            return try Self.integer(value, Int32.self, fieldName)
        default:
            throw WireError(.invalidJSON, "\(fieldName): expected a name of \(enumName)")
        }
    }

    /// " (its values: A, B, C)" for the refusal of a name an enum does not have, so that the person sees the right
    /// spelling (`TOKEN_STATE_ACTIVE`, not `ACTIVE`) without looking it up; an enum of many values names the first
    /// ones and how many there are.
    static func values(of descriptor: UnsafePointer<ProtobufCEnumDescriptor>) -> String {
        let count = Int(descriptor.pointee.n_values)
        guard count > 0 else { return "" }
        let shown = (0..<min(count, 12)).map { String(cString: descriptor.pointee.values[$0].name) }
        let more = count > shown.count ? ", … \(count) in all" : ""
        return " (its values: \(shown.joined(separator: ", "))\(more))"
    }

    /// An integer given as a JSON number or a string, read exactly from its decimal text.
    ///
    /// proto3 JSON takes a fraction or an exponent while the value stays whole (`1e3`, `5.0`), so the text is reduced
    /// to its digits and a power of ten rather than read through a `Double`, which rounds 64-bit values and accepts
    /// hexadecimal; a string must be written as a JSON number would be (no `+`, spaces or leading zeros).
    static func integer<Value: FixedWidthInteger>(_ json: JSONValue, _: Value.Type, _ name: String) throws -> Value {
        let text: String
        let shown: String
        switch json {
        case .number(let literal): (text, shown) = (literal, literal)
        case .string(let literal): (text, shown) = (literal, "\"\(literal)\"")
        default: throw WireError(.invalidJSON, "\(name): expected an integer, found \(json.kindName)")
        }
        guard let (negative, digits, exponent) = decimal(text) else {
            throw WireError(.invalidJSON, "\(name): \(shown) is not a decimal integer")
        }
        let zero = UInt8(ascii: "0")
        var significant = digits.drop { $0 == zero }
        var power = exponent
        while significant.last == zero {
            significant.removeLast()
            power += 1
        }
        if significant.isEmpty { return 0 }
        guard power >= 0 else {
            throw WireError(.invalidJSON, "\(name): \(shown) is not a whole number")
        }
        // A 64-bit limit has 19 or 20 digits, which every log and error masks as a card number would be
        // ("0 to ****************1615"): it is written as the power of two it comes from.
        func outOfRange() -> WireError {
            let range =
                Value.bitWidth < 64
                ? "\(Value.min) to \(Value.max)" : Value.isSigned ? "-2^63 to 2^63-1" : "0 to 2^64-1"
            return WireError(.invalidJSON, "\(name): \(shown) is out of range (\(range))")
        }
        // Past 20 digits nothing fits in 64 bits; up to there an Int128 holds the value without overflowing.
        guard significant.count + power <= 20 else { throw outOfRange() }
        var magnitude: Int128 = 0
        for digit in significant { magnitude = magnitude * 10 + Int128(digit - zero) }
        for _ in 0..<power { magnitude *= 10 }
        guard let value = Value(exactly: negative ? -magnitude : magnitude) else { throw outOfRange() }
        return value
    }

    /// The sign, digits and power of ten of text in the JSON number grammar (`-12.5e3` is -, "125", 2), or nil.
    private static func decimal(_ text: String) -> (negative: Bool, digits: [UInt8], exponent: Int)? {
        var rest = Array(text.utf8)[...]
        func take(_ byte: Unicode.Scalar) -> Bool {
            guard rest.first == UInt8(ascii: byte) else { return false }
            rest.removeFirst()
            return true
        }
        func digits() -> ArraySlice<UInt8> {
            let run = rest.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            rest.removeFirst(run.count)
            return run
        }
        let negative = take("-")
        let whole = digits()
        guard !whole.isEmpty, whole.count == 1 || whole.first != UInt8(ascii: "0") else { return nil }
        var fraction: ArraySlice<UInt8> = []
        if take(".") {
            fraction = digits()
            guard !fraction.isEmpty else { return nil }
        }
        var exponent = 0
        if take("e") || take("E") {
            let negativeExponent = take("-")
            if !negativeExponent { _ = take("+") }
            let power = digits()
            guard !power.isEmpty else { return nil }
            // Capped well past any text's length, so a huge exponent stays a huge exponent without overflowing.
            for digit in power { exponent = min(exponent * 10 + Int(digit - UInt8(ascii: "0")), Int(UInt32.max)) }
            if negativeExponent { exponent = -exponent }
        }
        guard rest.isEmpty else { return nil }
        return (negative, Array(whole + fraction), exponent - fraction.count)
    }

    static func floatingPoint(_ json: JSONValue, _ name: String) throws -> Double {
        switch json {
        case .number(let text):
            guard let value = Double(text), value.isFinite else {
                throw WireError(.invalidJSON, "\(name): \(text) is out of range for a double")
            }
            return value
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        case .string(let text):
            // Written as a JSON number would be: `Double(text)` alone also takes hexadecimal, "+1" and "inf".
            guard decimal(text) != nil, let value = Double(text) else {
                throw WireError(.invalidJSON, "\(name): \"\(text)\" is not a number")
            }
            // A number, too large for a double: said as for the same number unquoted ("1e309").
            guard value.isFinite else {
                throw WireError(.invalidJSON, "\(name): \"\(text)\" is out of range for a double")
            }
            return value
        default:
            throw WireError(.invalidJSON, "\(name): expected a number, found \(json.kindName)")
        }
    }
}
