/// A position in serialized protobuf bytes, for the scans that walk them before or after protobuf-c does
/// (`ProtoNULScan`, `ProtoUnknownFieldScan`): each read stops at `end` and reports bytes that run short.
struct ProtoWireReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    mutating func varint(end: Int) -> UInt64? {
        ProtoVarint.read(bytes, at: &position, end: end)
    }

    mutating func skip(_ count: Int, end: Int) -> Bool {
        guard end - position >= count else { return false }
        position += count
        return true
    }
}
