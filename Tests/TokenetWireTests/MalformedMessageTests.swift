import Testing
import TokenetWire

/// Bytes protobuf-c refuses are named with the byte and the field where they stop being the message: "the bytes
/// are not a valid … message" alone left a person decoding a capture nothing to look at.
@Suite struct MalformedMessageTests {
    @Test(arguments: [
        // Frame{stream_id: 1, call_start(5 bytes){method: claims 9 bytes, 3 left}}: the place is in the whole message.
        (
            [0x08, 0x01, 0x1A, 0x05, 0x0A, 0x09, 0x61, 0x62, 0x63] as [UInt8],
            "at byte 4, field tokenet.wire.v1.CallStart.method (1) claims 9 bytes where 3 are left (cut short?)"
        ),
        (
            [0x0A, 0x00],
            "at byte 0, field tokenet.wire.v1.Frame.stream_id (1) comes with wire type 2, not the varint (0) its "
                + "type (uint32) takes"
        ),
        ([0x08, 0x01, 0x08], "at byte 2, the varint of field tokenet.wire.v1.Frame.stream_id (1) runs past the end"),
        ([0x08, 0x01, 0xFF], "at byte 2, a field's key runs past the end of its message"),
        ([0x00, 0x01], "at byte 0, a field is numbered 0, which no message field can be"),
        (
            [0xF9, 0x07, 0x01],
            "at byte 0, the 8-byte value of field 127 runs past the end of its message (1 bytes left)"
        ),
        ([0xFB, 0x07], "at byte 0, field 127 comes with wire type 3, which Tokenet does not read"),
    ])
    func malformedBytesAreNamedWithTheirPlace(bytes: [UInt8], problem: String) {
        let error = #expect(throws: WireError.self) { try WireV1.Frame(serializedBytes: bytes) }
        #expect(error?.code == .invalidMessage)
        #expect(
            error?.message.hasPrefix("the bytes are not a valid tokenet.wire.v1.Frame message: \(problem)") == true,
            "\(String(describing: error))")
    }
}
