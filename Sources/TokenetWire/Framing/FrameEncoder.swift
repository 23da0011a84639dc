/// Writes frames in the Tokenet framing: a 4-byte big-endian length, then the serialized `WireV1.Frame`.
///
/// A pure value with no I/O: it appends to a caller-owned buffer, so a driver can gather several frames into one
/// write and reuse that buffer between writes.
public struct FrameEncoder: Sendable {
    /// The largest frame the peer accepts (its `Settings.max_frame_size`, or the 4 MiB default while unknown).
    ///
    /// Mutable because the peer announces it in its `Hello`, after the encoder exists.
    public var maximumFrameSize: Int

    public init(maximumFrameSize: Int = FrameFormat.defaultMaximumFrameSize) {
        precondition(maximumFrameSize >= 0, "a maximum frame size cannot be negative")
        self.maximumFrameSize = min(maximumFrameSize, FrameFormat.largestExpressibleFrameSize)
    }

    /// Appends the length prefix and `frame` to `buffer`.
    ///
    /// The message is serialized straight into `buffer` behind a reserved prefix that is patched afterwards, so no
    /// intermediate copy is made; the frames of every call (message, half-close, plain status) are written by hand
    /// (`FrameFastPath`), the rest by the generated codec. On any error `buffer` is left exactly as it was, so frames gathered before stay
    /// intact.
    ///
    /// - Throws: `WireError.frameTooLarge` when the serialized frame exceeds `maximumFrameSize`;
    ///   `WireError.unencodableValue` when a field cannot be serialized.
    public func encode(_ frame: WireV1.Frame, into buffer: inout [UInt8]) throws {
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: FrameFormat.lengthPrefixSize))
        do {
            if !FrameFastPath.append(frame, to: &buffer) { try frame.appendSerializedBytes(to: &buffer) }
        } catch {
            buffer.removeSubrange(start...)
            throw error
        }
        try finishFrame(startingAt: start, in: &buffer)
    }

    /// Appends a message frame for `streamID` whose data is `message`, packed by protobuf-c straight into `buffer`:
    /// the same bytes as `encode` of a frame holding `message`'s serialization, without that `Data` (a `malloc`, an
    /// object and a copy of the message per call).
    ///
    /// Returns the size of the data, which flow control counts, or nil with `buffer` untouched when it is larger
    /// than `maxDataSize` (the caller then sends it the queued way).
    ///
    /// - Throws: `WireError.frameTooLarge` as `encode`.
    public func encodeMessage(
        streamID: UInt32, _ message: PackableMessage, maxDataSize: Int, into buffer: inout [UInt8]
    ) throws -> Int? {
        let size = message.packedSize
        guard size <= maxDataSize else { return nil }
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: FrameFormat.lengthPrefixSize))
        FrameFastPath.appendMessageHeader(streamID: streamID, dataCount: size, to: &buffer)
        if size > 0 { message.append(size, to: &buffer) }
        try finishFrame(startingAt: start, in: &buffer)
        return size
    }

    /// Checks the frame that starts (with its reserved prefix) at `start` against the peer's maximum and writes its
    /// length prefix; a frame too large is removed again.
    private func finishFrame(startingAt start: Int, in buffer: inout [UInt8]) throws {
        let length = buffer.count - start - FrameFormat.lengthPrefixSize
        guard length <= maximumFrameSize else {
            buffer.removeSubrange(start...)
            throw WireError(
                .frameTooLarge,
                "a frame of \(length) bytes exceeds the peer's maximum frame size of \(maximumFrameSize) bytes"
            )
        }
        let prefix = UInt32(length)
        buffer[start] = UInt8(truncatingIfNeeded: prefix >> 24)
        buffer[start + 1] = UInt8(truncatingIfNeeded: prefix >> 16)
        buffer[start + 2] = UInt8(truncatingIfNeeded: prefix >> 8)
        buffer[start + 3] = UInt8(truncatingIfNeeded: prefix)
    }

    /// The length prefix and `frame` as a new array.
    public func encode(_ frame: WireV1.Frame) throws -> [UInt8] {
        var buffer: [UInt8] = []
        try encode(frame, into: &buffer)
        return buffer
    }
}
