import Foundation
import Testing
import TokenetWire

/// A call_start over `FrameFormat.maximumCallStartSize` is skipped unread and named by its stream, so only its call
/// is refused; frames around it decode as usual, and one at the limit decodes.
@Suite struct FrameDecoderCallStartLimitTests {
    /// A call_start whose metadata are `count` entries with empty keys and values: two bytes each, the cheapest a
    /// peer can send and the most a reader has to build.
    static func callStart(streamID: UInt32, entries count: Int) -> WireV1.Frame {
        let entries = [WireV1.MetadataEntry](repeating: WireV1.MetadataEntry(), count: count)
        return WireV1.Frame(streamID: streamID, kind: .callStart(WireV1.CallStart(method: "/a.B/C", metadata: entries)))
    }

    @Test func anOversizedCallStartIsSkippedAndNamed() throws {
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        let before = WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose()))
        let after = WireV1.Frame(streamID: 3, kind: .halfClose(WireV1.HalfClose()))
        try encoder.encode(before, into: &bytes)
        try encoder.encode(Self.callStart(streamID: 5, entries: 600_000), into: &bytes)
        try encoder.encode(after, into: &bytes)

        var decoder = FrameDecoder()
        decoder.feed(bytes)
        #expect(try decoder.nextFrame() == before)
        do {
            _ = try decoder.nextFrame()
            Issue.record("expected the call_start to be refused")
        } catch let error as WireError {
            #expect(error.code == .callStartTooLarge)
            #expect(error.streamID == 5)
            #expect(error.message.hasPrefix("call_start of 1200"), "\(error.message)")
            #expect(error.message.hasSuffix("may take at most 65536 bytes"), "\(error.message)")
        }
        #expect(try decoder.nextFrame() == after)
        #expect(try decoder.nextFrame() == nil)
    }

    @Test func aCallStartAtTheLimitDecodes() throws {
        // method (8 bytes with its tag and length) + 32,764 two-byte entries = 65,536 bytes of call_start.
        let frame = Self.callStart(streamID: 7, entries: (65_536 - 8) / 2)
        var bytes: [UInt8] = []
        try FrameEncoder().encode(frame, into: &bytes)
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        #expect(try decoder.nextFrame() == frame)
        let over = Self.callStart(streamID: 9, entries: (65_536 - 8) / 2 + 1)
        bytes = []
        try FrameEncoder().encode(over, into: &bytes)
        decoder.feed(bytes)
        #expect(throws: WireError.self) { try decoder.nextFrame() }
    }

    /// A call_start sent as several pieces in one frame (protobuf merges them into one message) counts whole.
    @Test func aCallStartInPiecesCountsWhole() throws {
        var piece: [UInt8] = []
        try FrameEncoder().encode(Self.callStart(streamID: 11, entries: 20_000), into: &piece)
        // The frame body without its prefix: stream_id then call_start; the call_start field appended twice more.
        let body = Array(piece.dropFirst(FrameFormat.lengthPrefixSize))
        let callStartField = Array(body.drop { $0 != 0x1A })
        let merged = body + callStartField + callStartField
        #expect(callStartField.count < FrameFormat.maximumCallStartSize)
        var bytes = withUnsafeBytes(of: UInt32(merged.count).bigEndian) { Array($0) }
        bytes += merged
        var decoder = FrameDecoder()
        decoder.feed(bytes)
        let error = try #require(throws: WireError.self) { try decoder.nextFrame() }
        #expect(error.code == .callStartTooLarge)
        #expect(error.streamID == 11)
    }
}
