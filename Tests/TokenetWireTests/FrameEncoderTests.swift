import Foundation
import Testing
import TokenetWire

@Suite struct FrameEncoderTests {
    @Test func prefixIsBigEndianLength() throws {
        let data = Data(repeating: 0xAB, count: 70_000)
        let frame = WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: data)))
        let bytes = try FrameEncoder().encode(frame)
        let size = try frame.serializedSize()
        #expect(size > 65_535, "the sample must need three significant prefix bytes")
        let expectedPrefix = [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        #expect(Array(bytes.prefix(4)) == expectedPrefix)
        #expect(bytes.count == 4 + size)
    }

    @Test func appendsBehindExistingBytes() throws {
        var buffer: [UInt8] = [9, 9, 9]
        try FrameEncoder().encode(FrameSamples.callStart, into: &buffer)
        try FrameEncoder().encode(WireV1.Frame(), into: &buffer)
        let body = try FrameSamples.callStart.serializedBytes()
        #expect(buffer == [9, 9, 9, 0, 0, 0, UInt8(body.count)] + body + [0, 0, 0, 0])
    }

    @Test func refusesFramesAboveThePeersMaximum() throws {
        let frame = FrameSamples.callStart
        let size = try frame.serializedSize()
        var buffer: [UInt8] = [1, 2, 3]
        let encoder = FrameEncoder(maximumFrameSize: size - 1)
        let error = try #require(throws: WireError.self) { try encoder.encode(frame, into: &buffer) }
        #expect(error.code == .frameTooLarge)
        #expect(error.message.contains("\(size) bytes"))
        #expect(error.message.contains("\(size - 1) bytes"))
        #expect(buffer == [1, 2, 3], "a refused frame must leave the buffer as it was")
    }

    @Test func acceptsAFrameOfExactlyTheMaximum() throws {
        let frame = FrameSamples.callStart
        let size = try frame.serializedSize()
        #expect(try FrameEncoder(maximumFrameSize: size).encode(frame).count == 4 + size)
    }

    @Test func maximumCanBeRaisedAfterThePeersHello() throws {
        var encoder = FrameEncoder(maximumFrameSize: 2)
        #expect(throws: WireError.self) { try encoder.encode(FrameSamples.callStart) }
        encoder.maximumFrameSize = FrameFormat.defaultMaximumFrameSize
        #expect(try encoder.encode(FrameSamples.callStart).count > 4)
    }

    @Test func unencodableFrameLeavesTheBufferUnchanged() throws {
        var buffer: [UInt8] = [7]
        let frame = WireV1.Frame(streamID: 1, kind: .cancel(WireV1.Cancel(reason: "nul\u{0}inside")))
        let error = try #require(throws: WireError.self) { try FrameEncoder().encode(frame, into: &buffer) }
        #expect(error.code == .unencodableValue)
        #expect(buffer == [7])
    }
}
