/// Constants of the Tokenet framing: a 4-byte unsigned big-endian length N, then N bytes holding exactly one
/// serialized `WireV1.Frame` (see Protos/tokenet/wire/v1/frame.proto).
public enum FrameFormat {
    /// Bytes of the length prefix in front of every frame.
    public static let lengthPrefixSize = 4

    /// The largest frame (the N of the prefix) a side accepts when its `Settings.max_frame_size` is 0: 4 MiB.
    public static let defaultMaximumFrameSize = 4_194_304

    /// The largest `call_start` (method, metadata and timeout) a side reads: 64 KiB, some hundred times what a call
    /// carries. A frame may be 4 MiB, and one of tiny metadata entries costs a reader hundreds of thousands of
    /// strings to build before any check could refuse them; the decoder refuses such a call before it reads it.
    public static let maximumCallStartSize = 65_536

    /// The most fields a frame larger than `maximumCallStartSize` may hold, counted at every level a reader builds
    /// (`FrameDecoder+FieldCount.swift`): a message frame holds a handful, a status with long words a few dozen.
    public static let maximumLargeFrameFields = 4096

    /// The largest N a 4-byte prefix can express; no maximum can usefully be higher.
    public static let largestExpressibleFrameSize = Int(UInt32.max)
}
