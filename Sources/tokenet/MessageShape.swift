/// Whether bytes read as a serialized protobuf message rather than as text: the decoders mask such a value whole
/// wherever a text or bytes field holds it. A message read as the wrong type (a request given where its response
/// is expected) puts a nested message, with a security code in it, in a field the type calls text, and the name of
/// that field says nothing of what it holds.
enum MessageShape {
    /// True when `bytes` are protobuf fields to their end, one of them length-delimited and not empty. Text that a
    /// person or a program wrote almost never is: a length below 32 is a control character. The same rule as the
    /// dissector's `reads_as_message` (Tools/dissector/tokenet.lua).
    static func readsAsMessage(_ bytes: some Collection<UInt8>) -> Bool {
        let bytes = Array(bytes)
        var offset = 0
        var delimited = false
        while offset < bytes.count {
            guard let key = varint(bytes, &offset) else { return false }
            let number = key >> 3
            guard number != 0 else { return false }
            switch key & 7 {
            case 0:
                guard varint(bytes, &offset) != nil else { return false }
            case 1:
                offset += 8
            case 2:
                guard let size = varint(bytes, &offset), size <= UInt64(bytes.count - offset) else { return false }
                if size > 0 { delimited = true }
                offset += Int(size)
            case 5:
                offset += 4
            default:
                return false
            }
            guard offset <= bytes.count else { return false }
        }
        return delimited
    }

    /// The varint at `offset`, moving past it; nil when it runs past the end or past 10 bytes.
    private static func varint(_ bytes: [UInt8], _ offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard offset < bytes.count else { return nil }
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << UInt64(min(shift, 63))
            if byte < 0x80 { return value }
        }
        return nil
    }
}
