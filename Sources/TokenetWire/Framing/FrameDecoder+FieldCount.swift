/// How many fields a large frame holds, counted before it is decoded.
///
/// Decoding a frame costs little per byte but much per field: protobuf-c allocates every element of a repeated
/// message field and every unknown field, and the conversion to Swift values allocates again. A frame of 4 MiB made
/// of two-byte metadata entries (two million of them, in a status's trailers) took a node two seconds of CPU and
/// 250 MB to read, and repeated on one connection it held the node's loop. Frames up to
/// `FrameFormat.maximumCallStartSize` hold too few fields to matter; a larger one may hold at most
/// `FrameFormat.maximumLargeFrameFields`, counted at every level protobuf-c builds (the frame, its kind, a status's
/// details and trailers, a hello's settings), unknown fields included. A call_start is bounded by its own limit (the
/// same 64 KiB, checked first) and counts as one field. Legitimate large frames are messages (a handful of fields
/// around the payload) and statuses with long words.
extension FrameDecoder {
    /// The messages of `tokenet.wire.v1` whose fields the count descends into: those protobuf-c builds as structures.
    private enum Level {
        case frame
        case hello
        case status
        /// A message whose fields are all scalars, strings or bytes (and unknown fields): counted, not entered.
        case leaf

        /// The level of field `number` when it is a message field protobuf-c builds; nil for any other.
        func child(_ number: UInt64) -> Level? {
            switch (self, number) {
            case (.frame, 2): return .hello
            case (.frame, 6): return .status
            case (.frame, 4...11): return .leaf
            case (.hello, 2), (.status, 3), (.status, 4): return .leaf
            default: return nil
            }
        }
    }

    /// Whether `body` holds more than `limit` fields at the levels protobuf-c builds; false too when the walk cannot
    /// follow the bytes (the decoder then reports what is wrong with them).
    static func holdsMoreFields(than limit: Int, in body: ArraySlice<UInt8>) -> Bool {
        body.withUnsafeBufferPointer { bytes in
            var count = 0
            return !walk(bytes, from: 0, to: bytes.count, at: .frame, count: &count, limit: limit)
        }
    }

    /// Counts the fields of the message in `bytes[start..<end]` at `level` and of its nested messages into `count`.
    /// False once `count` passes `limit`; true when it did not, or when the bytes cannot be followed.
    private static func walk(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, at level: Level, count: inout Int,
        limit: Int
    ) -> Bool {
        var index = start
        while index < end {
            count += 1
            if count > limit { return false }
            guard let key = ProtoVarint.read(bytes, at: &index, end: end) else { return true }
            switch key & 7 {
            case 0:
                guard ProtoVarint.read(bytes, at: &index, end: end) != nil else { return true }
            case 1, 5:
                index += key & 7 == 1 ? 8 : 4
            case 2:
                guard let length = ProtoVarint.read(bytes, at: &index, end: end), length <= UInt64(end - index) else {
                    return true
                }
                let fieldEnd = index + Int(length)
                if let child = level.child(key >> 3),
                    !walk(bytes, from: index, to: fieldEnd, at: child, count: &count, limit: limit)
                {
                    return false
                }
                index = fieldEnd
            default:
                return true
            }
        }
        return true
    }
}
