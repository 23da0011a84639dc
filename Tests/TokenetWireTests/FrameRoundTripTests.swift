import Foundation
import Testing
import TokenetWire

/// Sample frames used across the framing tests: one of every kind, plus the empty frame.
enum FrameSamples {
    static let callStart = WireV1.Frame(
        streamID: 1,
        kind: .callStart(
            WireV1.CallStart(
                method: "/tokenet.health.v1.Health/Check",
                metadata: [
                    WireV1.MetadataEntry(key: "tokenet-request-id", value: .text("r-42")),
                    WireV1.MetadataEntry(key: "trace-bin", value: .binary(Data([1, 2, 0xFF]))),
                ],
                timeoutMicros: 2_500_000
            )
        )
    )

    static let oneOfEachKind: [WireV1.Frame] = [
        WireV1.Frame(
            kind: .hello(
                WireV1.Hello(
                    protocolVersion: 1,
                    settings: WireV1.Settings(
                        maxFrameSize: 4_194_304,
                        maxConcurrentStreams: 100,
                        initialStreamWindow: 1_048_576,
                        keepaliveIntervalMs: 30_000
                    ),
                    agent: "tokenet-tsp-node/0.1"
                )
            )
        ),
        callStart,
        WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data((0..<300).map { UInt8($0 % 251) })))),
        WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())),
        WireV1.Frame(
            streamID: 1,
            kind: .status(
                WireV1.Status(
                    code: .invalidArgument,
                    message: "field \"pan\" is missing",
                    details: [WireV1.StatusDetail(type: "tokenet.wire.v1.RetryInfo", value: Data([8, 1]))],
                    trailers: [WireV1.MetadataEntry(key: "tokenet-retry", value: .text("no"))]
                )
            )
        ),
        WireV1.Frame(streamID: 3, kind: .cancel(WireV1.Cancel(reason: "client gave up"))),
        WireV1.Frame(kind: .ping(WireV1.Ping(payload: .max))),
        WireV1.Frame(kind: .pong(WireV1.Pong(payload: 7))),
        WireV1.Frame(
            kind: .goaway(
                WireV1.GoAway(lastStreamID: 7, code: .unsupportedVersion, reason: "this node speaks version 1")
            )
        ),
        WireV1.Frame(streamID: 5, kind: .windowUpdate(WireV1.WindowUpdate(increment: 65_536))),
        WireV1.Frame(),
    ]

    /// The samples encoded back to back, `repetitions` times.
    static func stream(repetitions: Int = 1) throws -> (frames: [WireV1.Frame], bytes: [UInt8]) {
        let encoder = FrameEncoder()
        var frames: [WireV1.Frame] = []
        var bytes: [UInt8] = []
        for round in 0..<repetitions {
            for var frame in oneOfEachKind {
                frame.streamID &+= UInt32(round * 2)
                try encoder.encode(frame, into: &bytes)
                frames.append(frame)
            }
        }
        return (frames, bytes)
    }
}

/// Every kind of frame survives encoder → decoder unchanged.
@Suite struct FrameRoundTripTests {
    @Test(arguments: FrameSamples.oneOfEachKind.indices)
    func roundTrip(index: Int) throws {
        let frame = FrameSamples.oneOfEachKind[index]
        let bytes = try FrameEncoder().encode(frame)
        let size = try frame.serializedSize()
        #expect(bytes.count == FrameFormat.lengthPrefixSize + size)
        #expect(Array(bytes.dropFirst(FrameFormat.lengthPrefixSize)) == (try frame.serializedBytes()))

        var decoder = FrameDecoder()
        decoder.feed(bytes)
        #expect(try decoder.nextFrame() == frame)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test func samplesCoverEveryKind() {
        let kinds = Set(
            FrameSamples.oneOfEachKind.map { frame -> String in
                guard let kind = frame.kind else { return "none" }
                return String(describing: kind).prefix { $0 != "(" }.description
            })
        #expect(kinds.count == 11, "kinds sampled: \(kinds.sorted())")
    }

    @Test func emptyFrameIsAZeroLengthFrame() throws {
        #expect(try FrameEncoder().encode(WireV1.Frame()) == [0, 0, 0, 0])
    }
}
