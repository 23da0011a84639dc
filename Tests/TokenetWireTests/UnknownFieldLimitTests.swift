import Foundation
import Testing

@testable import TokenetWire

/// A message of tiny fields its type does not have cost protobuf-c an allocation each, over twenty times the bytes
/// in memory: past `ProtoUnknownFieldScan.maximumUnknownFields` of them, nested ones counted, the bytes are refused
/// before they are unpacked. A few unknown fields, from a peer of a newer version, still read as before.
@Suite struct UnknownFieldLimitTests {
    static let limit = ProtoUnknownFieldScan.maximumUnknownFields

    /// `count` fields numbered 1000 (varint 0), which no test message has: three bytes each.
    static func unknownFields(_ count: Int) -> [UInt8] {
        Array([UInt8]([0xC0, 0x3E, 0x00]).repeated(count))
    }

    /// A length-delimited field `number` holding `body`.
    static func embedded(_ number: UInt8, _ body: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [number << 3 | 2]
        var length = UInt64(body.count)
        while length >= 0x80 {
            bytes.append(UInt8(length & 0x7F) | 0x80)
            length >>= 7
        }
        return bytes + [UInt8(length)] + body
    }

    @Test func upToTheLimitUnknownFieldsAreSkipped() throws {
        // A known field among them still reads: field 14 (f_string) "hi".
        let bytes = Self.unknownFields(Self.limit) + [0x72, 0x02, 0x68, 0x69]
        #expect(try TestingV1.Scalars(serializedBytes: bytes).fString == "hi")
    }

    @Test func pastTheLimitTheMessageIsRefusedBeforeItIsUnpacked() {
        let error = #expect(throws: WireError.self) {
            try TestingV1.Scalars(serializedBytes: Self.unknownFields(Self.limit + 1))
        }
        #expect(error?.code == .invalidMessage)
        #expect(
            error?.message
                == "the bytes hold more than 10000 fields that tokenet.testing.v1.Scalars does not have, the most "
                + "Tokenet reads in one message")
    }

    @Test func unknownFieldsOfNestedMessagesCount() {
        // Choice's field 5 is a Scalars: half the fields inside it, half beside it.
        let half = Self.limit / 2 + 1
        let bytes = Self.embedded(5, Self.unknownFields(half)) + Self.unknownFields(half)
        #expect(throws: WireError.self) { try TestingV1.Choice(serializedBytes: bytes) }
        let within = Self.embedded(5, Self.unknownFields(half - 1)) + Self.unknownFields(half - 1)
        #expect(throws: Never.self) { try TestingV1.Choice(serializedBytes: within) }
    }

    @Test func largeMessagesOfKnownFieldsAreUntouched() throws {
        let text = String(repeating: "x", count: 1 << 20)
        let bytes = try TestingV1.Scalars(fString: text).serializedBytes()
        #expect(try TestingV1.Scalars(serializedBytes: bytes).fString == text)
    }
}

extension Array {
    fileprivate func repeated(_ count: Int) -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(self.count * count)
        for _ in 0..<count { result += self }
        return result
    }
}
