import Foundation
import Testing
import TokenetWire

/// A small deterministic generator (SplitMix64), so split points are arbitrary yet the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Decodes `bytes` fed in chunks of the given sizes (cycled), pulling every available frame after each chunk.
func decodeAll(_ bytes: [UInt8], chunkSizes: [Int], decoder: inout FrameDecoder) throws -> [WireV1.Frame] {
    var frames: [WireV1.Frame] = []
    var offset = 0
    var turn = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunkSizes[turn % chunkSizes.count])
        decoder.feed(bytes[offset..<end])
        offset = end
        turn += 1
        while let frame = try decoder.nextFrame() {
            frames.append(frame)
        }
    }
    return frames
}

/// Compares frame sequences, reporting the count and the first difference instead of both whole sequences.
func expectSameFrames(
    _ decoded: [WireV1.Frame], _ expected: [WireV1.Frame], sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(decoded.count == expected.count, "frame count", sourceLocation: sourceLocation)
    if let index = (0..<min(decoded.count, expected.count)).first(where: { decoded[$0] != expected[$0] }) {
        Issue.record("frame \(index) is \(decoded[index]), expected \(expected[index])", sourceLocation: sourceLocation)
    }
}

@Suite struct FrameDecoderTests {
    @Test func byteByByte() throws {
        let (frames, bytes) = try FrameSamples.stream()
        var boundaries: Set<Int> = []
        var offset = 0
        for frame in frames {
            offset += try FrameEncoder().encode(frame).count
            boundaries.insert(offset)
        }

        var decoder = FrameDecoder()
        var decoded: [WireV1.Frame] = []
        for (index, byte) in bytes.enumerated() {
            decoder.feed([byte])
            let frame = try decoder.nextFrame()
            // A frame appears exactly when its last byte arrives, never earlier.
            #expect((frame != nil) == boundaries.contains(index + 1), "after byte \(index)")
            if let frame { decoded.append(frame) }
            #expect(try decoder.nextFrame() == nil)
        }
        expectSameFrames(decoded, frames)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test func thousandFramesInOneBuffer() throws {
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        var frames: [WireV1.Frame] = []
        for index in 0..<1_000 {
            let frame = WireV1.Frame(streamID: UInt32(index * 2 + 1), kind: .ping(WireV1.Ping(payload: UInt64(index))))
            try encoder.encode(frame, into: &bytes)
            frames.append(frame)
        }
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        #expect(decoder.bufferedByteCount == bytes.count)
        var decoded: [WireV1.Frame] = []
        while let frame = try decoder.nextFrame() {
            decoded.append(frame)
        }
        expectSameFrames(decoded, frames)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test(arguments: [1, 2, 3, 42, 2026] as [UInt64])
    func arbitrarySplitPoints(seed: UInt64) throws {
        let (frames, bytes) = try FrameSamples.stream(repetitions: 40)
        var generator = SplitMix64(state: seed)
        let chunkSizes = (0..<500).map { _ in Int.random(in: 1...97, using: &generator) }
        var decoder = FrameDecoder()
        let decoded = try decodeAll(bytes, chunkSizes: chunkSizes, decoder: &decoder)
        expectSameFrames(decoded, frames)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test func acceptsDataSlicesAndRawBuffers() throws {
        let bytes = try FrameEncoder().encode(FrameSamples.callStart)
        var decoder = FrameDecoder()
        decoder.feed(Data(bytes.prefix(3)))
        decoder.feed(bytes[3..<10])
        bytes[10...].withUnsafeBytes { decoder.feed($0) }
        #expect(try decoder.nextFrame() == FrameSamples.callStart)
    }

    @Test func zeroLengthFrameIsAnEmptyFrame() throws {
        var bytes: [UInt8] = [0, 0, 0, 0]
        try FrameEncoder().encode(FrameSamples.callStart, into: &bytes)
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        #expect(try decoder.nextFrame() == WireV1.Frame())
        #expect(try decoder.nextFrame() == FrameSamples.callStart)
        #expect(try decoder.nextFrame() == nil)
    }

    // MARK: End of stream

    @Test func cleanEndOfStream() throws {
        var decoder = FrameDecoder()
        try decoder.finish()
        decoder.feed(try FrameEncoder().encode(FrameSamples.callStart))
        // Complete frames not yet pulled are not a truncation; they can still be read.
        try decoder.finish()
        #expect(try decoder.nextFrame() == FrameSamples.callStart)
    }

    @Test(arguments: 1...3)
    func endOfStreamInsideThePrefix(prefixBytes: Int) throws {
        var bytes = try FrameEncoder().encode(FrameSamples.oneOfEachKind[0])
        let complete = bytes.count
        try FrameEncoder().encode(FrameSamples.callStart, into: &bytes)
        var decoder = FrameDecoder()
        decoder.feed(bytes.prefix(complete + prefixBytes))
        #expect(try decoder.nextFrame() == FrameSamples.oneOfEachKind[0])
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == prefixBytes)
        let error = try #require(throws: WireError.self) { try decoder.finish() }
        #expect(error.code == .truncatedFrame)
        #expect(error.message.contains("\(prefixBytes) of its 4 bytes"), "\(error)")
        #expect(decoder.failure == error)
    }

    @Test func endOfStreamInsideTheBody() throws {
        let bytes = try FrameEncoder().encode(FrameSamples.callStart)
        let bodySize = bytes.count - 4
        var decoder = FrameDecoder()
        decoder.feed(bytes.dropLast(5))
        #expect(try decoder.nextFrame() == nil)
        let error = try #require(throws: WireError.self) { try decoder.finish() }
        #expect(error.code == .truncatedFrame)
        #expect(error.message.contains("\(bodySize - 5) of its \(bodySize) bytes"), "\(error)")
        // The decoder stays failed.
        decoder.feed(bytes.suffix(5))
        #expect(throws: error) { try decoder.nextFrame() }
    }

    // MARK: Size limits

    @Test func oversizedPrefixIsRejectedWithNothingBuffered() throws {
        var decoder = FrameDecoder()
        let length = FrameFormat.defaultMaximumFrameSize + 1
        let prefix = [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        decoder.feed(prefix + [UInt8](repeating: 0x0A, count: 1_000))
        #expect(decoder.bufferedByteCount == 0)
        let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(error.code == .frameTooLarge)
        #expect(error.message.contains("\(length) bytes"), "\(error)")
        #expect(error.message.contains("\(FrameFormat.defaultMaximumFrameSize) bytes"), "\(error)")
        // Failed for good: more bytes are dropped and the same error comes back.
        decoder.feed([UInt8](repeating: 0, count: 64))
        #expect(decoder.bufferedByteCount == 0)
        #expect(throws: error) { try decoder.nextFrame() }
        #expect(throws: error) { try decoder.finish() }
    }

    @Test func oversizedPrefixSplitAcrossChunksIsDroppedOnItsFourthByte() throws {
        var decoder = FrameDecoder(maximumFrameSize: 100)
        decoder.feed([0x00, 0x00])
        #expect(decoder.bufferedByteCount == 2)
        #expect(try decoder.nextFrame() == nil)
        decoder.feed([0xFF, 0xFF, 0x0A, 0x0B, 0x0C])
        #expect(decoder.bufferedByteCount == 0)
        let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(error.code == .frameTooLarge)
        #expect(error.message.contains("65535 bytes") && error.message.contains("100 bytes"), "\(error)")
    }

    @Test func framesBeforeAnOversizedPrefixAreStillDelivered() throws {
        let (frames, bytes) = try FrameSamples.stream()
        var decoder = FrameDecoder()
        decoder.feed(bytes + [0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 1, count: 4_096))
        #expect(decoder.bufferedByteCount == bytes.count, "only the frames in front of the bad prefix are kept")
        var decoded: [WireV1.Frame] = []
        let error = try #require(throws: WireError.self) {
            while let frame = try decoder.nextFrame() {
                decoded.append(frame)
            }
        }
        expectSameFrames(decoded, frames)
        #expect(error.code == .frameTooLarge)
        #expect(error.message.contains("\(UInt32.max) bytes"), "\(error)")
        #expect(decoder.bufferedByteCount == 0)
    }

    /// A stream that opens with HTTP, a TLS record or other text is named for what it is, however it is chunked; the
    /// same bytes after a good frame are only an oversized prefix. Text once got only "a frame of 1014132851 bytes".
    @Test(arguments: [
        (Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "the peer sent HTTP (\"GET ...\")"),
        (Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), "the peer sent HTTP (\"PRI ...\")"),
        // An HTTP server's answer, which a client reads: the address is no node.
        (
            Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8),
            "the peer answered with HTTP (\"HTTP...\"), not a Tokenet frame: the address is an HTTP server"
        ),
        ([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03], "the peer sent a TLS record"),
        ([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46], "the peer sent a TLS record"),
        (Array("<html><body>Hello</body></html>\n".utf8), "the peer sent text (\"<htm...\")"),
        (Array("SSH-2.0-OpenSSH_9.2\r\n".utf8), "the peer sent text (\"SSH-...\")"),
        (Array("220 mail ESMTP\r\n".utf8), "the peer sent text (\"220 ...\")"),
    ])
    func anotherProtocolIsNamed(bytes: [UInt8], message: String) throws {
        for chunkSize in [1, 3, bytes.count] {
            var decoder = FrameDecoder()
            let error = try #require(throws: WireError.self) {
                _ = try decodeAll(bytes, chunkSizes: [chunkSize], decoder: &decoder)
            }
            #expect(error.code == .foreignProtocol)
            #expect(error.message.hasPrefix(message), "\(error)")
        }
        var whole = FrameDecoder()
        whole.feed(bytes)  // the array is adopted, not copied: the other path that checks prefixes
        let wholeError = try #require(throws: WireError.self) { try whole.nextFrame() }
        #expect(wholeError.code == .foreignProtocol)
        let (_, good) = try FrameSamples.stream()
        var decoder = FrameDecoder()
        let error = try #require(throws: WireError.self) {
            _ = try decodeAll(good + bytes, chunkSizes: [7], decoder: &decoder)
        }
        #expect(error.code == .frameTooLarge)
    }

    @Test func customMaximumAcceptsExactlyItsSize() throws {
        let frame = FrameSamples.callStart
        let size = try frame.serializedSize()
        let bytes = try FrameEncoder().encode(frame)

        var exact = FrameDecoder(maximumFrameSize: size)
        #expect(exact.maximumFrameSize == size)
        exact.feed(bytes)
        #expect(try exact.nextFrame() == frame)

        var smaller = FrameDecoder(maximumFrameSize: size - 1)
        smaller.feed(bytes)
        #expect(smaller.bufferedByteCount == 0)
        let error = try #require(throws: WireError.self) { try smaller.nextFrame() }
        #expect(error.code == .frameTooLarge)
        #expect(error.message.contains("\(size) bytes") && error.message.contains("\(size - 1) bytes"), "\(error)")
    }

    @Test func zeroMaximumAllowsOnlyEmptyFrames() throws {
        var decoder = FrameDecoder(maximumFrameSize: 0)
        decoder.feed([0, 0, 0, 0, 0, 0, 0, 1, 0])
        #expect(try decoder.nextFrame() == WireV1.Frame())
        #expect(throws: WireError.self) { try decoder.nextFrame() }
    }

    // MARK: Bad bytes

    @Test(
        arguments: [
            [0xFF, 0xFF, 0xFF],  // a varint key that never ends
            [0x0A, 0x05, 0x01],  // field 1 as length-delimited: wrong wire type for a uint32
            [0x12, 0x10, 0x00],  // Hello claiming 16 bytes, only 1 present
            [0x3A, 0x02, 0x0A, 0x01],  // Cancel whose reason string runs past its end
        ] as [[UInt8]])
    func garbageIsAnInvalidMessage(body: [UInt8]) throws {
        var decoder = FrameDecoder()
        decoder.feed([0, 0, 0, UInt8(body.count)] + body)
        let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(error.code == .invalidMessage)
        #expect(decoder.failure == error)
        #expect(decoder.bufferedByteCount == 0)
        decoder.feed(try FrameEncoder().encode(FrameSamples.callStart))
        #expect(throws: error) { try decoder.nextFrame() }
    }

    /// A well-formed frame whose string is not UTF-8: on a call's stream only that frame is skipped (its call is
    /// refused); on stream 0, which belongs to the connection, the decoder fails.
    @Test func aStringThatIsNotUTF8RefusesItsCallOrTheConnection() throws {
        let cancel: [UInt8] = [0x3A, 0x03, 0x0A, 0x01, 0xC3]  // Cancel whose reason is not UTF-8
        var decoder = FrameDecoder()
        let onCall: [UInt8] = [0x08, 0x05] + cancel
        decoder.feed([0, 0, 0, UInt8(onCall.count)] + onCall)
        decoder.feed(try FrameEncoder().encode(FrameSamples.callStart))
        let skipped = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(skipped.code == .unreadableValue)
        #expect(skipped.streamID == 5)
        #expect(!skipped.opensCall, "a cancel opens no call")
        #expect(skipped.message.contains("not valid UTF-8"), "\(skipped)")
        #expect(try decoder.nextFrame() == FrameSamples.callStart)

        var connection = FrameDecoder()
        connection.feed([0, 0, 0, UInt8(cancel.count)] + cancel)
        let error = try #require(throws: WireError.self) { try connection.nextFrame() }
        #expect(error.streamID == nil)
        #expect(connection.failure == error)
    }

    @Test func garbageAfterGoodFramesIsReportedInOrder() throws {
        var decoder = FrameDecoder()
        var bytes = try FrameEncoder().encode(FrameSamples.callStart)
        bytes += [0, 0, 0, 2, 0xFF, 0xFF]
        decoder.feed(bytes)
        #expect(try decoder.nextFrame() == FrameSamples.callStart)
        #expect(throws: WireError.self) { try decoder.nextFrame() }
    }

    /// A stream id wider than 32 bits is refused: protobuf-c keeps its low bits, which made a half_close sent for
    /// stream 2^40 one of the connection's own (stream 0), or one for 2^32 + 5 another call's (5).
    @Test(arguments: [
        ([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x2A, 0x00] as [UInt8], "1099511627776"),
        ([0x08, 0x85, 0x80, 0x80, 0x80, 0x10, 0x2A, 0x00] as [UInt8], "4294967301"),
    ])
    func aStreamIDAbove32BitsIsRefused(body: [UInt8], shown: String) throws {
        var decoder = FrameDecoder()
        decoder.feed([0, 0, 0, UInt8(body.count)] + body)
        let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(error.code == .invalidMessage)
        #expect(
            error.message
                == "a frame of \(body.count) bytes could not be read: its stream id \(shown) is above 2^32 - 1")
        // The widest id that fits is a stream id like any other.
        var widest = FrameDecoder()
        let fits: [UInt8] = [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x2A, 0x00]
        widest.feed([0, 0, 0, UInt8(fits.count)] + fits)
        #expect(try widest.nextFrame()?.streamID == UInt32.max)
    }

    /// The refusals that concern one call only (an oversized call_start, a string that is not UTF-8) went to the
    /// call a wide stream id's low bits name (stream 2^32 + 5 to 5): such a frame fails the connection instead.
    @Test func aWideStreamIDFailsTheConnectionOnEveryPath() throws {
        let wide: [UInt8] = [0x08, 0x85, 0x80, 0x80, 0x80, 0x10]  // stream id 2^32 + 5
        let notUTF8 = wide + [0x3A, 0x03, 0x0A, 0x01, 0xC3]  // Cancel whose reason is not UTF-8
        let size = FrameFormat.maximumCallStartSize + 10
        let oversized =
            wide + [0x1A] + Self.varint(UInt64(size)) + [0x0A] + Self.varint(UInt64(size - 4)) + [0x2F]
            + [UInt8](repeating: 0x61, count: size - 5)
        for body in [notUTF8, oversized] {
            var decoder = FrameDecoder()
            let length = body.count
            decoder.feed(
                [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
                    + body)
            let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
            #expect(error.streamID == nil, "\(error)")
            #expect(error.message.hasSuffix("its stream id 4294967301 is above 2^32 - 1"), "\(error)")
            #expect(decoder.failure == error)
        }
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        return bytes + [UInt8(rest)]
    }
}
