import Foundation
import Testing
import TokenetWire

/// Every generated message survives binary and JSON round trips with every field set.
@Suite struct GeneratedMessageRoundTripTests {
    @Test func everyMessageHasSamples() {
        let sampled = Set(generatedSamples.map { type(of: $0).protoName })
        let generated = Set(ProtoRegistry.messages.map { $0.protoName })
        #expect(sampled == generated)
    }

    @Test(arguments: generatedSamples.indices)
    func binaryRoundTrip(index: Int) throws {
        try Self.checkBinary(generatedSamples[index])
    }

    @Test(arguments: generatedSamples.indices)
    func jsonRoundTrip(index: Int) throws {
        try Self.checkJSON(generatedSamples[index])
    }

    @Test(arguments: ProtoRegistry.messages.map { $0.protoName })
    func defaultMessageIsEmpty(name: String) throws {
        let type = try #require(ProtoRegistry.messageType(named: name))
        try Self.checkEmpty(type)
    }

    static func checkBinary<M: ProtoMessage>(_ sample: M) throws {
        let bytes = try sample.serializedBytes()
        let hasFields = !M.protoFields.isEmpty
        #expect(bytes.isEmpty != hasFields, "\(M.protoName) sample serialized to \(bytes.count) bytes")
        #expect(try sample.serializedSize() == bytes.count)
        let decoded = try M(serializedBytes: bytes)
        #expect(decoded == sample, "\(M.protoName) changed in a binary round trip")
        #expect((decoded != M()) == hasFields, "\(M.protoName) sample decoded to the default value")
    }

    static func checkJSON<M: ProtoMessage>(_ sample: M) throws {
        let json = try sample.jsonString()
        let decoded = try M(jsonString: json)
        #expect(decoded == sample, "\(M.protoName) changed in a JSON round trip: \(json)")
        let pretty = try sample.jsonString(options: .pretty)
        #expect(try M(jsonString: pretty) == sample)
    }

    static func checkEmpty<M: ProtoMessage>(_: M.Type) throws {
        #expect(try M().serializedBytes() == [])
        #expect(try M(serializedBytes: [UInt8]()) == M())
        #expect(try M().jsonString() == "{}")
        #expect(try M(jsonString: "{}") == M())
    }
}
