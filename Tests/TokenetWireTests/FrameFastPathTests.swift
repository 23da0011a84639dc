import Foundation
import Testing

@testable import TokenetWire

/// The hand-written codec for message, half-close and plain status frames must agree with the generated protobuf-c
/// codec on every byte it writes and on every frame it reads, and leave everything else to it.
@Suite struct FrameFastPathTests {
    static let streamIDs: [UInt32] = [0, 1, 2, 127, 128, 300, 16_383, 16_384, 2_097_151, 2_097_152, UInt32.max]
    static let sizes = [0, 1, 2, 63, 64, 127, 128, 255, 256, 16_383, 16_384, 16_385, 70_000]

    static func payload(_ size: Int, seed: Int) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
    }

    static var callStarts: [WireV1.CallStart] {
        let entries: [[WireV1.MetadataEntry]] = [
            [],
            [WireV1.MetadataEntry(key: "tokenet-trace-id", value: .text("a1b2c3d4e5f60718"))],
            [WireV1.MetadataEntry(key: "k", value: .text(""))],
            [WireV1.MetadataEntry(key: "bin", value: .binary(Data()))],
            [WireV1.MetadataEntry(key: "bin", value: .binary(payload(300, seed: 3)))],
            [WireV1.MetadataEntry(key: "", value: .text("no key"))],
            [WireV1.MetadataEntry(key: "no-value", value: nil)],
            [WireV1.MetadataEntry()],
            (0..<20).map { index in
                WireV1.MetadataEntry(key: "key-\(index)", value: .text(String(repeating: "v", count: index * 9)))
            },
        ]
        var starts: [WireV1.CallStart] = []
        for method in ["", "/tokenet.bench.v1.Bench/Echo", "/" + String(repeating: "m", count: 140)] {
            for metadata in entries {
                for timeout: UInt64? in [nil, 0, 1, 300, 5_000_000, UInt64.max] {
                    starts.append(WireV1.CallStart(method: method, metadata: metadata, timeoutMicros: timeout))
                }
            }
        }
        return starts
    }

    static var fastFrames: [WireV1.Frame] {
        var frames: [WireV1.Frame] = []
        for id in streamIDs {
            for size in sizes {
                frames.append(.init(streamID: id, kind: .message(.init(data: payload(size, seed: Int(id % 251))))))
            }
            frames.append(.init(streamID: id, kind: .halfClose(.init())))
            for (index, start) in callStarts.enumerated() where index % 3 == Int(id % 3) || id < 3 {
                frames.append(.init(streamID: id, kind: .callStart(start)))
            }
            for code in [0, 1, 5, 13, 16] {
                for message in ["", "x", "the deadline passed", String(repeating: "m", count: 200)] {
                    var status = WireV1.Status()
                    status.code = WireV1.StatusCode(rawValue: Int32(code))
                    status.message = message
                    frames.append(.init(streamID: id, kind: .status(status)))
                }
            }
        }
        return frames
    }

    @Test func writesExactlyWhatTheGeneratedCodecWrites() throws {
        for frame in Self.fastFrames {
            var fast: [UInt8] = [7]
            #expect(FrameFastPath.append(frame, to: &fast), "\(frame) should take the fast path")
            var generic: [UInt8] = [7]
            try frame.appendSerializedBytes(to: &generic)
            #expect(fast == generic, "stream \(frame.streamID), \(String(describing: frame.kind).prefix(60))")
        }
    }

    @Test func readsWhatTheGeneratedCodecWritesAsItWould() throws {
        for frame in Self.fastFrames {
            let bytes = try frame.serializedBytes()
            let fast = try #require(FrameFastPath.decode(bytes[...]), "\(frame) should take the fast path")
            #expect(fast == frame)
            #expect(fast == (try WireV1.Frame(serializedBytes: bytes)))
        }
    }

    @Test func leavesOtherFramesToTheGeneratedCodec() throws {
        var detailed = WireV1.Status()
        detailed.code = .notFound
        detailed.details = [WireV1.StatusDetail(type: "t", value: Data([1]))]
        var withTrailers = WireV1.Status()
        withTrailers.trailers = [WireV1.MetadataEntry(key: "k", value: .text("v"))]
        var withNUL = WireV1.Status()
        withNUL.message = "a\u{0}b"
        let others: [WireV1.Frame] = [
            WireV1.Frame(),
            .init(streamID: 1, kind: .callStart(.init(method: "/a.B/C\u{0}"))),
            .init(streamID: 1, kind: .callStart(.init(metadata: [.init(key: "k", value: .text("a\u{0}"))]))),
            .init(streamID: 1, kind: .status(detailed)),
            .init(streamID: 1, kind: .status(withTrailers)),
            .init(streamID: 1, kind: .status(withNUL)),
            .init(streamID: 0, kind: .ping(.init(payload: 9))),
            .init(streamID: 3, kind: .cancel(.init(reason: "r"))),
        ]
        for frame in others {
            var buffer: [UInt8] = [1]
            #expect(!FrameFastPath.append(frame, to: &buffer))
            #expect(buffer == [1], "a refused frame leaves the buffer as it was")
            if let bytes = try? frame.serializedBytes() {
                #expect(FrameFastPath.decode(bytes[...]) == nil)
            }
        }
        let accentedMethod = try WireV1.Frame(streamID: 2, kind: .callStart(.init(method: "/é.B/C"))).serializedBytes()
        #expect(FrameFastPath.decode(accentedMethod[...]) == nil, "non-ASCII text is read by the generated codec")
        var accented = WireV1.Status()
        accented.message = "échec"
        let bytes = try WireV1.Frame(streamID: 2, kind: .status(accented)).serializedBytes()
        #expect(FrameFastPath.decode(bytes[...]) == nil, "non-ASCII text is read by the generated codec")
    }

    /// Valid protobuf that is not in the canonical form (fields reordered or repeated, unknown fields, explicit
    /// defaults) and malformed bytes: the fast path declines, and the decoder's answer is the generated codec's.
    @Test func declinesNonCanonicalAndMalformedBytes() throws {
        let cases: [[UInt8]] = [
            [0x22, 0x02, 0x0A, 0x00, 0x08, 0x05],  // message before stream_id
            [0x08, 0x05, 0x22, 0x00, 0x22, 0x00],  // the oneof member twice
            [0x08, 0x05, 0x22, 0x03, 0x0A, 0x01, 0x41, 0x78, 0x01],  // trailing unknown field
            [0x08, 0x05, 0x22, 0x05, 0x0A, 0x01, 0x41, 0x10, 0x01],  // unknown field inside Message
            [0x08, 0x00, 0x2A, 0x00],  // explicit stream_id 0
            [0x08, 0x05, 0x32, 0x02, 0x08, 0x00],  // explicit OK code
            [0x08, 0x05, 0x32, 0x04, 0x12, 0x01, 0x41, 0x08],  // code after message, truncated
            [0x08, 0x05, 0x2A, 0x01, 0x00],  // half-close with a body
            [0x08, 0x05, 0x1A, 0x05, 0x12, 0x00, 0x0A, 0x01, 0x41],  // metadata before the method
            [0x08, 0x05, 0x1A, 0x04, 0x18, 0x01, 0x18, 0x02],  // the timeout twice
            [0x08, 0x05, 0x1A, 0x02, 0x0A, 0x00],  // explicit empty method
            [0x08, 0x05, 0x1A, 0x06, 0x12, 0x04, 0x12, 0x00, 0x0A, 0x00],  // entry value before its key
            [0x08, 0x05, 0x1A, 0x04, 0x12, 0x02, 0x0A, 0x05],  // key longer than its entry
            [0x08, 0x05, 0x1A, 0x03, 0x12, 0x01, 0x20],  // unknown field inside an entry
            [0x08, 0x05, 0x22, 0x09, 0x0A],  // length past the end
            [0x08],  // truncated varint
            [],
        ]
        for bytes in cases {
            #expect(FrameFastPath.decode(bytes[...]) == nil, "\(bytes)")
            var decoder = FrameDecoder()
            decoder.feed([0, 0, 0, UInt8(bytes.count)] + bytes)
            let viaDecoder = Result { try decoder.nextFrame() }
            let generic = Result { try WireV1.Frame(serializedBytes: bytes) }
            switch (viaDecoder, generic) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(bytes)")
            case (.failure, .failure): break
            default: Issue.record("the decoder and the generated codec disagree on \(bytes)")
            }
        }
        // A stream id above UInt32: the generated codec keeps its low bits, the decoder refuses the frame.
        let wide: [UInt8] = [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x2A, 0x00]
        #expect(FrameFastPath.decode(wide[...]) == nil)
        var decoder = FrameDecoder()
        decoder.feed([0, 0, 0, UInt8(wide.count)] + wide)
        #expect(throws: WireError.self) { try decoder.nextFrame() }
        #expect(try WireV1.Frame(serializedBytes: wide).streamID == UInt32.max)
    }

    /// Many fast-path frames in one buffer, fed in arbitrary chunks, come out whole and in order.
    @Test func manyFramesInOneBufferAndSplitAnywhere() throws {
        let frames = Array(Self.fastFrames.prefix(120))
        var stream: [UInt8] = []
        let encoder = FrameEncoder()
        for frame in frames { try encoder.encode(frame, into: &stream) }
        for chunk in [1, 3, 17, 4096, stream.count] {
            var decoder = FrameDecoder()
            var read: [WireV1.Frame] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + chunk)
                decoder.feed(Array(stream[offset..<end]))
                while let frame = try decoder.nextFrame() { read.append(frame) }
                offset = end
            }
            #expect(read == frames, "chunks of \(chunk) bytes")
        }
    }
}
