import Foundation
import Testing
import TokenetWire

/// `FrameEncoder.encodeMessage` packs an application message straight into its frame; the bytes must be exactly
/// those of a frame that carries the message's serialization as `Data`.
@Suite struct FrameEncoderPackedMessageTests {
    static func viaData(_ message: some ProtoMessage, streamID: UInt32) throws -> [UInt8] {
        let frame = WireV1.Frame(
            streamID: streamID, kind: .message(WireV1.Message(data: try message.serializedData())))
        return try FrameEncoder().encode(frame)
    }

    static func packed(_ message: some ProtoMessage, streamID: UInt32, into buffer: inout [UInt8]) throws -> Int? {
        try message.withPackable { packable in
            try FrameEncoder().encodeMessage(streamID: streamID, packable, maxDataSize: .max, into: &buffer)
        }
    }

    @Test func everyGeneratedMessagePacksAsItsSerializedFrame() throws {
        for message in generatedSamples {
            for streamID: UInt32 in [1, 127, 128, 16_385, UInt32(Int32.max)] {
                var buffer: [UInt8] = [9, 9]
                let size = try #require(try Self.packed(message, streamID: streamID, into: &buffer))
                #expect(size == (try message.serializedSize()))
                #expect(buffer == [9, 9] + (try Self.viaData(message, streamID: streamID)), "\(type(of: message))")
            }
        }
    }

    @Test func payloadSizesAroundEveryVarintBoundaryPackAlike() throws {
        for count in [0, 1, 120, 121, 122, 125, 126, 127, 128, 16_370, 16_380, 16_384, 70_000] {
            let message = BenchV1.EchoRequest(payload: Data((0..<count).map { UInt8(truncatingIfNeeded: $0) }))
            var buffer: [UInt8] = []
            #expect(try Self.packed(message, streamID: 3, into: &buffer) == (try message.serializedSize()))
            #expect(buffer == (try Self.viaData(message, streamID: 3)), "payload of \(count) bytes")
        }
    }

    @Test func aMessageAboveTheAllowanceLeavesTheBufferUntouched() throws {
        let message = BenchV1.EchoRequest(payload: Data(count: 300))
        let size = try message.serializedSize()
        var buffer: [UInt8] = [1, 2, 3]
        let refused = try message.withPackable { packable in
            try FrameEncoder().encodeMessage(streamID: 5, packable, maxDataSize: size - 1, into: &buffer)
        }
        #expect(refused == nil && buffer == [1, 2, 3])
        let accepted = try message.withPackable { packable in
            try FrameEncoder().encodeMessage(streamID: 5, packable, maxDataSize: size, into: &buffer)
        }
        #expect(accepted == size && buffer.count > 3 + size)
    }

    @Test func aFrameAboveThePeersMaximumIsRefusedAndRemoved() throws {
        let message = BenchV1.EchoRequest(payload: Data(count: 1000))
        var buffer: [UInt8] = [4]
        let error = #expect(throws: WireError.self) {
            try message.withPackable { packable in
                try FrameEncoder(maximumFrameSize: 500).encodeMessage(
                    streamID: 1, packable, maxDataSize: .max, into: &buffer)
            }
        }
        #expect(error?.code == .frameTooLarge && buffer == [4])
    }

    @Test func aMessageThatCannotBeSerializedFailsBeforeAnythingIsWritten() throws {
        var message = TestingV1.Scalars()
        message.fString = "a\u{0}b"
        let error = #expect(throws: WireError.self) { try message.withPackable { _ in Issue.record("not reached") } }
        #expect(error?.code == .unencodableValue)
    }
}
