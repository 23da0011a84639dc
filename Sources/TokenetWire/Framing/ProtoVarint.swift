/// Reads protobuf varints straight from serialized bytes, for the code that looks at bytes without protobuf-c
/// (`FrameFastPath`, `ProtoNULScan`).
enum ProtoVarint {
    /// The varint at `index`, of at most 10 bytes as protobuf accepts it (non-minimal forms included), read no
    /// further than `end`; `index` moves past it. Nil when the bytes end first.
    @inline(__always)
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int, end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
