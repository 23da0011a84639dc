import Foundation
import Testing

@testable import TokenetWire

/// `PackableMessage.append` packs small messages into zeroed room and large ones through protobuf-c's buffer
/// interface; both must append exactly the message's serialization.
@Suite struct PackableMessageAppendTests {
    @Test func bothWaysAppendTheSerializationOfEveryGeneratedMessage() throws {
        for message in generatedSamples {
            let expected = [UInt8](try message.serializedData())
            for threshold in [0, Int.max] {
                var buffer: [UInt8] = [7, 7, 7]
                try message.withPackable { packable in
                    packable.append(packable.packedSize, to: &buffer, threshold: threshold)
                }
                #expect(buffer == [7, 7, 7] + expected, "\(type(of: message)), threshold \(threshold)")
            }
        }
    }

    @Test func largeMessagesAppendAlikeAroundTheThreshold() throws {
        let threshold = PackableMessage.appendThreshold
        for count in [threshold - 4, threshold - 3, threshold, threshold + 1, 16_384, 200_000] {
            let message = BenchV1.EchoRequest(payload: Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
            var viaBuffer: [UInt8] = [1]
            var viaZeros: [UInt8] = [1]
            try message.withPackable { packable in
                packable.append(packable.packedSize, to: &viaBuffer, threshold: 0)
                packable.append(packable.packedSize, to: &viaZeros, threshold: .max)
            }
            #expect(viaBuffer == viaZeros, "payload of \(count) bytes")
            #expect(viaBuffer == [1] + [UInt8](try message.serializedData()), "payload of \(count) bytes")
        }
    }
}
