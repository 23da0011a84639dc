import Foundation
import Testing
import TokenetWire

/// A frame over `FrameFormat.maximumCallStartSize` bytes may hold at most `FrameFormat.maximumLargeFrameFields`
/// fields, counted at every level a reader builds: a status of two million empty trailers cost a node two seconds and
/// 250 MB to read. Large frames of few fields (a message's payload, a status's long message) read as before.
@Suite struct FrameDecoderLargeFrameFieldTests {
    static func bytes(of frame: WireV1.Frame) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try FrameEncoder().encode(frame, into: &bytes)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> WireV1.Frame? {
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        return try decoder.nextFrame()
    }

    @Test func aStatusOfManyTinyTrailersIsRefusedUnread() throws {
        let trailers = [WireV1.MetadataEntry](repeating: WireV1.MetadataEntry(), count: 40_000)
        let frame = WireV1.Frame(streamID: 1, kind: .status(WireV1.Status(code: .ok, trailers: trailers)))
        let bytes = try Self.bytes(of: frame)
        #expect(bytes.count > FrameFormat.maximumCallStartSize)
        let error = try #require(throws: WireError.self) { try Self.decode(bytes) }
        #expect(error.code == .invalidMessage)
        #expect(error.streamID == nil, "the connection's error: no call is named")
        #expect(error.message.contains("holds more than 4096 fields"), "\(error.message)")
    }

    /// Unknown fields inside a message frame's `Message` count too: protobuf-c keeps each.
    @Test func aMessageFrameOfManyUnknownFieldsIsRefused() throws {
        let unknown = [UInt8]([0xC0, 0x3E, 0x00])  // field 1000, varint 0
        var inner: [UInt8] = []
        for _ in 0..<30_000 { inner += unknown }
        var body: [UInt8] = [0x08, 0x01, 0x22]  // stream_id 1, then field 4 (message)
        var length = inner.count
        while length >= 0x80 {
            body.append(UInt8(length & 0x7F) | 0x80)
            length >>= 7
        }
        body.append(UInt8(length))
        body += inner
        let bytes = withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + body
        let error = try #require(throws: WireError.self) { try Self.decode(bytes) }
        #expect(error.message.contains("holds more than 4096 fields"), "\(error.message)")
    }

    @Test func largeFramesOfFewFieldsRead() throws {
        let payload = WireV1.Frame(
            streamID: 3, kind: .message(WireV1.Message(data: Data(repeating: 7, count: 1_000_000))))
        #expect(try Self.decode(Self.bytes(of: payload)) == payload)
        let words = WireV1.Frame(
            streamID: 5,
            kind: .status(
                WireV1.Status(
                    code: .internal, message: String(repeating: "w", count: 200_000),
                    trailers: [WireV1.MetadataEntry](
                        repeating: WireV1.MetadataEntry(key: "k", value: .text("v")), count: 1000))))
        #expect(try Self.decode(Self.bytes(of: words)) == words)
    }

    /// An oversized call_start on stream 0 opens no call to refuse: the connection's error, found before the frame
    /// is read (it was decoded whole, then refused for its stream id).
    @Test func anOversizedCallStartOnStreamZeroFailsTheConnectionUnread() throws {
        let entries = [WireV1.MetadataEntry](repeating: WireV1.MetadataEntry(), count: 40_000)
        let frame = WireV1.Frame(streamID: 0, kind: .callStart(WireV1.CallStart(method: "/a.B/C", metadata: entries)))
        let error = try #require(throws: WireError.self) { try Self.decode(Self.bytes(of: frame)) }
        #expect(error.code == .invalidMessage)
        #expect(error.streamID == nil)
        #expect(error.message.contains("is on stream 0, which no call may use"), "\(error.message)")
    }
}
