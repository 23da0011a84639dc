import Foundation
import Testing
import TokenetWire

/// Chunks fed as whole arrays, the way the transport hands them over: the decoder keeps them instead of copying, so
/// frames that straddle chunks, chunks fed before the frames in front are pulled, and limits found in a kept chunk
/// each take their own path.
@Suite struct FrameDecoderArrayFeedTests {
    /// Frames with payloads of many sizes, up to several times the chunk sizes used below.
    static func payloadStream() throws -> (frames: [WireV1.Frame], bytes: [UInt8]) {
        let encoder = FrameEncoder()
        var frames: [WireV1.Frame] = []
        var bytes: [UInt8] = []
        for (index, size) in [0, 1, 63, 64, 255, 256, 1_000, 16_384, 5, 40_000, 2, 300].enumerated() {
            let payload = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            let frame = WireV1.Frame(streamID: UInt32(index * 2 + 1), kind: .message(WireV1.Message(data: payload)))
            try encoder.encode(frame, into: &bytes)
            frames.append(frame)
        }
        return (frames, bytes)
    }

    @Test(arguments: [7, 8, 9, 10] as [UInt64])
    func arraysSplitAnywherePulledAfterEach(seed: UInt64) throws {
        let (frames, bytes) = try Self.payloadStream()
        var generator = SplitMix64(state: seed)
        var decoder = FrameDecoder()
        var decoded: [WireV1.Frame] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + Int.random(in: 1...20_000, using: &generator))
            decoder.feed(Array(bytes[offset..<end]))
            offset = end
            while let frame = try decoder.nextFrame() { decoded.append(frame) }
        }
        expectSameFrames(decoded, frames)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func arraysFedSeveralTimesBeforePulling(seed: UInt64) throws {
        let (frames, bytes) = try Self.payloadStream()
        var generator = SplitMix64(state: seed)
        var decoder = FrameDecoder()
        var decoded: [WireV1.Frame] = []
        var offset = 0
        var pulled = 0
        while offset < bytes.count {
            for _ in 0..<Int.random(in: 1...3, using: &generator) where offset < bytes.count {
                let end = min(bytes.count, offset + Int.random(in: 1...9_000, using: &generator))
                decoder.feed(Array(bytes[offset..<end]))
                offset = end
            }
            #expect(decoder.bufferedByteCount == offset - pulled)
            while let frame = try decoder.nextFrame() {
                decoded.append(frame)
                pulled += try FrameEncoder().encode(frame).count
                if Bool.random(using: &generator) { break }
            }
        }
        while let frame = try decoder.nextFrame() { decoded.append(frame) }
        expectSameFrames(decoded, frames)
        try decoder.finish()
    }

    @Test func oversizedPrefixInTheChunkAfterAStraddlingFrame() throws {
        let first = WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(repeating: 7, count: 500))))
        let second = WireV1.Frame(streamID: 3, kind: .ping(WireV1.Ping(payload: 9)))
        var bytes = try FrameEncoder().encode(first)
        let split = bytes.count - 10
        try FrameEncoder().encode(second, into: &bytes)
        bytes += [0x00, 0x10, 0x00, 0x00] + [UInt8](repeating: 1, count: 100)
        var decoder = FrameDecoder(maximumFrameSize: 1_024)
        decoder.feed(Array(bytes[..<split]))
        #expect(try decoder.nextFrame() == nil)
        decoder.feed(Array(bytes[split...]))
        #expect(try decoder.nextFrame() == first)
        #expect(try decoder.nextFrame() == second)
        #expect(throws: WireError.self) { try decoder.nextFrame() }
        #expect(decoder.failure?.code == .frameTooLarge)
    }

    @Test func streamEndingInsideAFrameAfterAQueuedChunk() throws {
        let frame = WireV1.Frame(streamID: 5, kind: .message(WireV1.Message(data: Data(repeating: 3, count: 200))))
        let one = try FrameEncoder().encode(frame)
        let bytes = one + one + one.prefix(50)
        var decoder = FrameDecoder()
        decoder.feed(Array(bytes[..<100]))
        decoder.feed(Array(bytes[100...]))
        #expect(try decoder.nextFrame() == frame)
        #expect(try decoder.nextFrame() == frame)
        #expect(try decoder.nextFrame() == nil)
        #expect(throws: WireError.self) { try decoder.finish() }
        #expect(decoder.failure?.code == .truncatedFrame)
    }

    /// `bytes` values large enough to be taken over from protobuf-c (on decode) or pointed to in place (on encode)
    /// come out equal, and the message they came from is unchanged.
    @Test(arguments: [63, 64, 65, 255, 256, 257, 70_000])
    func largeBytesFieldsRoundTrip(size: Int) throws {
        let payload = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let message = WireV1.Message(data: payload)
        let data = try message.serializedData()
        let bytes = try message.serializedBytes()
        #expect(Data(bytes) == data)
        #expect(try WireV1.Message(serializedBytes: data) == message)
        #expect(try WireV1.Message(serializedBytes: bytes).data == payload)
        #expect(message.data == payload)
    }
}
