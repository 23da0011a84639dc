import Foundation
import Testing
import TokenetWire

/// What the message data of decoded frames keeps alive of the bytes the transport handed over.
@Suite struct FrameDecoderRetentionTests {
    /// The address range of `bytes`' storage.
    static func storage(of bytes: [UInt8]) -> Range<UInt> {
        bytes.withUnsafeBytes { buffer in
            let start = UInt(bitPattern: buffer.baseAddress)
            return start..<start + UInt(buffer.count)
        }
    }

    static func address(of data: Data) -> UInt {
        data.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
    }

    /// A message that is a small part of what was read is copied out, so that holding it does not keep the whole
    /// read alive; one that takes most of it stays in place. Every message of 1 KiB or more stayed in place, so a
    /// 2 KiB request that arrived with 200 KB of other frames kept all 200 KB alive while its call lasted.
    @Test func onlyAMessageThatTakesMostOfAReadStaysInIt() throws {
        let small = Data(repeating: 7, count: 2048)
        let large = Data(repeating: 9, count: 200_000)
        var bytes: [UInt8] = []
        try FrameEncoder().encode(WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: small))), into: &bytes)
        try FrameEncoder().encode(WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: large))), into: &bytes)
        let read = Self.storage(of: bytes)
        var decoder = FrameDecoder()
        decoder.feed(bytes)

        let first = try #require(try decoder.nextFrame())
        guard case .message(let smallMessage)? = first.kind else {
            Issue.record("not a message: \(first)")
            return
        }
        #expect(smallMessage.data == small)
        #expect(!read.contains(Self.address(of: smallMessage.data)), "the small message was left in the read")

        let second = try #require(try decoder.nextFrame())
        guard case .message(let largeMessage)? = second.kind else {
            Issue.record("not a message: \(second)")
            return
        }
        #expect(largeMessage.data == large)
        #expect(read.contains(Self.address(of: largeMessage.data)), "the large message was copied")
    }
}
