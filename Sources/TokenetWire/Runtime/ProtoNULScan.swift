import CProtobufC
import Glibc

/// Finds a string field whose bytes on the wire hold a NUL.
///
/// protobuf-c hands strings over as NUL-terminated `char *`, so a string sent as `"A\0B"` would reach Swift as `"A"`
/// without a word: a method name, a card reference or a metadata key silently cut short. Proto3 allows NUL in a
/// string, but Tokenet cannot carry one (it refuses to send one, see `ProtoArena.cString`), so a received message
/// that holds one is refused as invalid rather than read as something it is not.
///
/// The scan walks the serialized bytes with the message's descriptor, descending into message fields. It runs only
/// on bytes that protobuf-c has already unpacked, so it can skip anything malformed; and only when the bytes hold a
/// zero byte at all, which most small messages do not.
enum ProtoNULScan {
    /// Nesting deeper than this is not scanned further (Tokenet's messages nest a few levels; the bound keeps a
    /// hostile input from growing the stack).
    static let maximumDepth = 64

    /// The qualified name of the first string field in `bytes` whose value holds a NUL, or nil.
    static func stringFieldWithNUL(
        in bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> String? {
        guard let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil else { return nil }
        var reader = ProtoWireReader(bytes: bytes.bindMemory(to: UInt8.self))
        return scan(&reader, end: bytes.count, descriptor: descriptor, depth: 0)
    }

    private static func scan(
        _ reader: inout ProtoWireReader, end: Int, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int
    ) -> String? {
        while reader.position < end {
            guard let key = reader.varint(end: end) else { return nil }
            let number = UInt32(truncatingIfNeeded: key >> 3)
            switch key & 7 {
            case 0:
                guard reader.varint(end: end) != nil else { return nil }
            case 1:
                guard reader.skip(8, end: end) else { return nil }
            case 5:
                guard reader.skip(4, end: end) else { return nil }
            case 2:
                guard let length = reader.varint(end: end), length <= UInt64(end - reader.position) else {
                    return nil
                }
                let valueEnd = reader.position + Int(length)
                if let field = protobuf_c_message_descriptor_get_field(descriptor, number) {
                    let field = ProtoField(descriptor, field: field)
                    switch field.type {
                    case .string where reader.holdsNUL(upTo: valueEnd):
                        return field.qualifiedName
                    case .message where depth < maximumDepth:
                        var inner = reader
                        if let found = scan(
                            &inner, end: valueEnd, descriptor: field.messageDescriptor, depth: depth + 1)
                        {
                            return found
                        }
                    default:
                        break
                    }
                }
                reader.position = valueEnd
            default:
                // Groups: protobuf-c accepted the bytes, and no Tokenet message has a group to look into.
                return nil
            }
        }
        return nil
    }
}

extension ProtoWireReader {
    fileprivate func holdsNUL(upTo end: Int) -> Bool {
        guard end > position, let base = bytes.baseAddress else { return false }
        return memchr(base + position, 0, end - position) != nil
    }
}
