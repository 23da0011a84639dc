import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// What the dissector shows of varints too large for their fields, in malformed frames (`PlaintextCapture`; needs
/// tshark, not root).
@Suite struct DissectorVarintTests {
    /// A varint is read into a Lua number, which rounds above 2^53 and prints above 10^14 in exponent form
    /// ("1.844674407371e+19"), and the 32-bit fields (stream id, status code, window increment, ...) showed such a
    /// value cut to 0 or to its low bits: a goaway with code 2^33 read "NO_ERROR (0)" in its tree.
    @Test func aVarintAboveItsFieldsRangeShowsAsSent() async throws {
        let maximum = UInt64.max
        let settings = Self.varintField(1, 1 << 35)
        let frames: [[UInt8]] = [
            // stream_id 2^64 - 1, window_update { increment 2^40 }
            Self.frame(Self.varintField(1, maximum) + Self.message(11, Self.varintField(1, 1 << 40))),
            // window_update { increment 2^53 + 1 }
            Self.frame(Self.message(11, Self.varintField(1, (1 << 53) + 1))),
            // goaway { last_stream_id 2^63 + 5, code 2^33 }
            Self.frame(Self.message(10, Self.varintField(1, (1 << 63) + 5) + Self.varintField(2, 1 << 33))),
            // stream_id 3, status { code 2^53 + 1 }
            Self.frame(Self.varintField(1, 3) + Self.message(6, Self.varintField(1, (1 << 53) + 1))),
            // hello { protocol_version 2^60 + 3, settings { max_frame_size 2^35 } }
            Self.frame(Self.message(2, Self.varintField(1, (1 << 60) + 3) + Self.message(2, settings))),
        ]
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40020)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        for frame in frames { capture.send(frame, on: &connection, fromClient: true) }
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark([
            "-r", directory.path("capture.pcap"), "-V", "-O", "tokenet",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        for line in [
            "Tokenet: 18446744073709551615 window_update +1099511627776",
            "Stream id: 18446744073709551615",
            "Window increment: 1099511627776",
            "Tokenet: window_update +9007199254740993",
            "Tokenet: goaway code 8589934592 last=9223372036854775813",
            "Last stream id: 9223372036854775813",
            "Goaway code: Unknown (8589934592)",
            "Tokenet: 3 status code 9007199254740993",
            "Status code: Unknown (9007199254740993)",
            "Tokenet: hello v1152921504606846979",
            "Protocol version: 1152921504606846979",
            "Max frame size: 34359738368",
            "[Value 34359738368 is above 2^32 - 1]",
        ] {
            #expect(result.stdout.contains(line), "no \(line) in:\n\(result.stdout)")
        }
        #expect(!result.stdout.contains("e+"), "\(result.stdout)")
        #expect(!result.stdout.contains("NO_ERROR"), "\(result.stdout)")
        // 8 values above 32 bits, each marked once (the tree shows each expert info's text twice).
        #expect(result.stdout.components(separatedBy: "is above 2^32 - 1]").count - 1 == 2 * 8, "\(result.stdout)")
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        return bytes + [UInt8(rest)]
    }

    static func varintField(_ number: UInt64, _ value: UInt64) -> [UInt8] { varint(number << 3) + varint(value) }

    static func message(_ number: UInt64, _ body: [UInt8]) -> [UInt8] {
        varint(number << 3 | 2) + varint(UInt64(body.count)) + body
    }

    static func frame(_ body: [UInt8]) -> [UInt8] {
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            + body
    }
}

/// Card numbers in number fields: an amount, an id or an unknown field that holds one shows masked in the tree, as
/// `tokenet decode` shows it, and a time in milliseconds stays as it is.
@Suite struct DissectorNumberMaskingTests {
    static let pan: UInt64 = 4_761_000_010_000_009

    static func fixed64(_ number: UInt64, _ value: UInt64) -> [UInt8] {
        DissectorVarintTests.varint(number << 3 | 1) + (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    @Test func aCardNumberInANumberFieldShowsMasked() async throws {
        let pan = Self.pan
        // tokenet.testing.v1.Scalars: f_int64 (4), f_uint64 (6), f_sint64 (8, zigzag of -pan), f_fixed64 (10),
        // f_double (1), and field 17, which the schema does not have.
        let first =
            DissectorVarintTests.varintField(4, pan) + DissectorVarintTests.varintField(6, pan)
            + DissectorVarintTests.varintField(8, 2 * pan - 1) + Self.fixed64(10, pan)
            + Self.fixed64(1, Double(pan).bitPattern) + DissectorVarintTests.varintField(17, pan)
        // Field 100, which the schema does not have, holding a message whose field 1 is the card number.
        let nested = DissectorVarintTests.message(100, DissectorVarintTests.varintField(1, pan))
        // f_int64 -pan; f_uint64 a time in milliseconds.
        let second =
            DissectorVarintTests.varintField(4, UInt64(bitPattern: -Int64(pan)))
            + DissectorVarintTests.varintField(6, 1_764_647_000_000)
        // Numbers that hold no card number stay as they are: a negative int64 (whose unsigned reading has 20
        // digits), a negative sint64, a fixed64 time (a tiny number read as a double) and a double with no short
        // form in 17 digits.
        let third =
            DissectorVarintTests.varintField(4, UInt64(bitPattern: -1)) + DissectorVarintTests.varintField(8, 9)
            + Self.fixed64(10, 1_764_647_000_000) + Self.fixed64(1, (0.1).bitPattern)
        let start = WireV1.CallStart(method: "/tokenet.testing.v1.Echo/Unary")
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40021)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        capture.send(
            try PlaintextCapture.bytes([
                WireV1.Frame(streamID: 1, kind: .callStart(start)),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(first)))),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(second)))),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(third)))),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(nested)))),
                // A method this build does not know: its message's numbers are masked all the same.
                WireV1.Frame(streamID: 3, kind: .callStart(WireV1.CallStart(method: "/unknown.v1.Svc/Method"))),
                WireV1.Frame(
                    streamID: 3,
                    kind: .message(WireV1.Message(data: Data(DissectorVarintTests.varintField(1, pan))))),
            ]), on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark([
            "-r", directory.path("capture.pcap"), "-V", "-O", "tokenet,protobuf",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("Lua Error"), "\(result.stdout)")
        // Each masked field shows as zero in the masked copy of the message, and the frame says so.
        #expect(result.stdout.contains("(card data masked; a masked number reads 0)"), "\(result.stdout)")
        for field in ["f_int64: 0", "f_uint64: 0", "f_sint64: 0", "f_fixed64: 0", "f_double: 0", "Field(17): 0"] {
            #expect(result.stdout.contains(field), "no \(field) in:\n\(result.stdout)")
        }
        // Nor its bytes, which hex views show: a varint's decode straight back to the number.
        let varintHex = DissectorVarintTests.varint(pan).map { String(format: "%02x", $0) }.joined()
        for digits in ["4761000010000009", "761000010000009", "4.761000010000009", "9522000020000017", varintHex] {
            #expect(!result.stdout.contains(digits), "\(digits) in:\n\(result.stdout)")
        }
        #expect(result.stdout.contains("f_uint64: 1764647000000"), "\(result.stdout)")
        for field in ["f_int64: -1", "f_sint64: -5", "f_fixed64: 1764647000000", "f_double: 0.1"] {
            #expect(result.stdout.contains(field), "no \(field) in:\n\(result.stdout)")
        }
    }
}
