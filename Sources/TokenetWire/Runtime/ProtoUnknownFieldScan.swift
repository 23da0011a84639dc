import CProtobufC

/// Counts the fields of serialized bytes that the message's descriptor does not know, before they are unpacked.
///
/// protobuf-c keeps every unknown field it meets as an allocation of its own (a struct and a copy of the bytes), so
/// a message made of tiny fields with an unknown number (two bytes each) costs over twenty times its size in memory
/// and a long stretch of CPU to unpack and free: one 4 MiB frame of them took about 95 MiB and a quarter of a second
/// of the loop thread. A peer of a newer version adds a few fields, never thousands; past
/// `maximumUnknownFields` the bytes are refused before protobuf-c sees them.
///
/// The scan walks the bytes with the descriptor, descending into message fields, as `ProtoNULScan` does. It runs
/// only on messages large enough to hold more than the limit (two bytes per field), so the small messages of the
/// call path never pay for it; and it skips what it cannot read, which the unpack then refuses.
enum ProtoUnknownFieldScan {
    /// The most unknown fields a message may carry, nested ones included.
    static let maximumUnknownFields = 10_000

    /// Nesting deeper than this is not scanned further (`ProtoNULScan.maximumDepth`).
    static let maximumDepth = 64

    /// Whether `bytes` carry more than `maximumUnknownFields` fields that `descriptor` does not know.
    static func exceedsLimit(
        _ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Bool {
        guard bytes.count > 2 * maximumUnknownFields else { return false }
        var reader = ProtoWireReader(bytes: bytes.bindMemory(to: UInt8.self))
        var unknown = 0
        scan(&reader, end: bytes.count, descriptor: descriptor, depth: 0, unknown: &unknown)
        return unknown > maximumUnknownFields
    }

    /// How many fields of `bytes` (those of nested messages included) `descriptor` does not know, counted up to
    /// one past `maximumUnknownFields`: what a decoding drops. Unlike the size of the bytes written back, it counts
    /// nothing for the legal encodings that are written back shorter (a default value written out, a field sent
    /// twice, a varint longer than it needs).
    static func count(
        _ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> Int {
        var reader = ProtoWireReader(bytes: bytes.bindMemory(to: UInt8.self))
        var unknown = 0
        scan(&reader, end: bytes.count, descriptor: descriptor, depth: 0, unknown: &unknown)
        return unknown
    }

    private static func scan(
        _ reader: inout ProtoWireReader, end: Int, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int,
        unknown: inout Int
    ) {
        while reader.position < end, unknown <= maximumUnknownFields {
            guard let key = reader.varint(end: end) else { return }
            let number = UInt32(truncatingIfNeeded: key >> 3)
            let field = protobuf_c_message_descriptor_get_field(descriptor, number)
            if field == nil { unknown += 1 }
            switch key & 7 {
            case 0:
                guard reader.varint(end: end) != nil else { return }
            case 1:
                guard reader.skip(8, end: end) else { return }
            case 5:
                guard reader.skip(4, end: end) else { return }
            case 2:
                guard let length = reader.varint(end: end), length <= UInt64(end - reader.position) else { return }
                let valueEnd = reader.position + Int(length)
                if let field, depth < maximumDepth {
                    let known = ProtoField(descriptor, field: field)
                    if known.type == .message {
                        var inner = reader
                        scan(
                            &inner, end: valueEnd, descriptor: known.messageDescriptor, depth: depth + 1,
                            unknown: &unknown)
                    }
                }
                reader.position = valueEnd
            default:
                // Groups: no Tokenet message has one; the unpack decides what such bytes are.
                return
            }
        }
    }
}

extension ProtoMessage {
    /// How many fields of `bytes`, read as this message, it does not have (`ProtoUnknownFieldScan.count`): fields
    /// of a newer .proto, or of another message type.
    public static func unknownFieldCount(in bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { ProtoUnknownFieldScan.count($0, descriptor: _protobufC.pointer) }
    }
}
