import Foundation
import Testing
import TokenetWire

/// A NUL inside a received string is refused: protobuf-c would otherwise cut the string at the NUL and the message
/// would be read as something it is not (a method "/a.B/C\0x" routed as "/a.B/C").
@Suite struct ReceivedNULTests {
    /// Frame{stream_id: 1, call_start{method: "/a.B/C\0x"}}, written by hand: Tokenet refuses to encode it.
    static let callStartWithNUL: [UInt8] =
        [0x08, 0x01, 0x1A, 0x0A, 0x0A, 0x08] + Array("/a.B/C".utf8) + [0x00] + Array("x".utf8)

    @Test func aMethodNameWithNULIsRefusedNotCutShort() throws {
        let error = #expect(throws: WireError.self) { try WireV1.Frame(serializedBytes: Self.callStartWithNUL) }
        #expect(error?.code == .unreadableValue)
        #expect(error?.message.contains("tokenet.wire.v1.CallStart.method") == true, "\(String(describing: error))")
        #expect(error?.message.contains("NUL") == true)
    }

    static func framed(_ body: [UInt8]) -> [UInt8] { [0, 0, 0, UInt8(body.count)] + body }

    @Test func theFrameDecoderSkipsTheFrameAndNamesItsCall() throws {
        // The unreadable frame and a good one after it arrive in one chunk.
        let next = try FrameEncoder().encode(WireV1.Frame(streamID: 3, kind: .halfClose(WireV1.HalfClose())))
        var decoder = FrameDecoder()
        decoder.feed(Self.framed(Self.callStartWithNUL) + next)
        let error = #expect(throws: WireError.self) { _ = try decoder.nextFrame() }
        #expect(error?.code == .unreadableValue)
        #expect(error?.streamID == 1)
        #expect(error?.message.contains("NUL") == true, "\(String(describing: error))")
        #expect(decoder.failure == nil)
        #expect(try decoder.nextFrame()?.streamID == 3)
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == 0)
        try decoder.finish()
    }

    @Test func theStreamIDIsFoundWhereverTheFieldStands() throws {
        // Frame{call_start{method: "/a\0"}, stream_id: 7}: the id after the kind, as protobuf allows.
        let start: [UInt8] = [0x0A, 0x03, 0x2F, 0x61, 0x00]
        let body: [UInt8] = [0x1A, UInt8(start.count)] + start + [0x08, 0x07]
        var decoder = FrameDecoder()
        decoder.feed(Self.framed(body))
        let error = #expect(throws: WireError.self) { _ = try decoder.nextFrame() }
        #expect(error?.streamID == 7)
    }

    @Test func onTheConnectionsOwnStreamItEndsTheConnection() throws {
        // Frame{hello{agent: "a\0"}} on stream 0: there is no call to refuse, so the decoder fails.
        var decoder = FrameDecoder()
        decoder.feed(Self.framed([0x12, 0x04, 0x1A, 0x02, 0x61, 0x00]))
        let error = #expect(throws: WireError.self) { _ = try decoder.nextFrame() }
        #expect(error?.streamID == nil)
        #expect(error?.message.contains("tokenet.wire.v1.Hello.agent") == true, "\(String(describing: error))")
        #expect(decoder.failure != nil)
    }

    @Test func garbageOnACallsStreamStillEndsTheConnection() throws {
        // Frame{stream_id: 1} then a length-delimited field that runs past the end: not a Frame at all.
        var decoder = FrameDecoder()
        decoder.feed(Self.framed([0x08, 0x01, 0x1A, 0x09, 0x0A]))
        let error = #expect(throws: WireError.self) { _ = try decoder.nextFrame() }
        #expect(error?.code == .invalidMessage)
        #expect(error?.streamID == nil)
        #expect(decoder.failure != nil)
    }

    @Test func aNULInANestedStringIsFound() throws {
        // Choice{nested{label: "a\0"}}: field 6, then Nested.label (field 1).
        let bytes: [UInt8] = [0x32, 0x04, 0x0A, 0x02, 0x61, 0x00]
        let error = #expect(throws: WireError.self) { try TestingV1.Choice(serializedBytes: bytes) }
        #expect(
            error?.message.contains("tokenet.testing.v1.Choice.Nested.label") == true, "\(String(describing: error))")
    }

    @Test func aNULInARepeatedStringIsFound() throws {
        // Frame{stream_id: 1, call_start{metadata: [{key: "k", text: "ok"}, {key: "k", text: "a\0"}]}}.
        let entry = { (text: [UInt8]) -> [UInt8] in
            [0x12, UInt8(5 + text.count), 0x0A, 0x01, 0x6B, 0x12, UInt8(text.count)] + text
        }
        let start = entry(Array("ok".utf8)) + entry([0x61, 0x00])
        let bytes: [UInt8] = [0x08, 0x01, 0x1A, UInt8(start.count)] + start
        let error = #expect(throws: WireError.self) { try WireV1.Frame(serializedBytes: bytes) }
        #expect(error?.message.contains("tokenet.wire.v1.MetadataEntry.text") == true, "\(String(describing: error))")
    }

    @Test func zeroBytesOutsideStringsAreFine() throws {
        // Choice{blob: [0, 0]}, then Choice{nested{inner{values: [0]}}}: zero bytes in bytes and varint fields.
        let blob = try TestingV1.Choice(serializedBytes: [0x1A, 0x02, 0x00, 0x00] as [UInt8])
        #expect(blob.pick == .blob(Data([0, 0])))
        let nested = try TestingV1.Choice(serializedBytes: [0x32, 0x04, 0x12, 0x02, 0x08, 0x00] as [UInt8])
        guard case .nested(let value)? = nested.pick else {
            Issue.record("expected nested, got \(String(describing: nested.pick))")
            return
        }
        #expect(value.inner?.values == [0])
        // A string field of an unknown field number is not read, so its NUL does not matter.
        let unknown = try TestingV1.Choice(serializedBytes: [0xFA, 0x01, 0x02, 0x61, 0x00] as [UInt8])
        #expect(unknown.pick == nil)
    }

    @Test func truncatedOrMalformedBytesKeepTheirOwnError() {
        let error = #expect(throws: WireError.self) {
            try TestingV1.Choice(serializedBytes: [0x32, 0x09, 0x0A, 0x02, 0x61, 0x00] as [UInt8])
        }
        #expect(error?.message.contains("not a valid") == true, "\(String(describing: error))")
    }
}
