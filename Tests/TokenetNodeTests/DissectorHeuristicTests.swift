import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// How the dissector finds Tokenet connections by their content (the heuristic on TCP and TLS): a hello whose bytes
/// come in several segments is found, and other traffic is left to the dissectors it would go to without Tokenet's.
/// Captures written byte for byte (`PlaintextCapture`); needs tshark, not root.
@Suite struct DissectorHeuristicTests {
    /// A client's hello in segments of a few bytes each was never found: the heuristic looked for a whole hello in
    /// the first segment, so the connection showed no frame until the server's hello, and the client's calls none.
    @Test(arguments: [1, 2, 3, 7])
    func aHelloSplitAcrossSegmentsIsFound(segmentSize: Int) async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40010)
        let call = try DissectorCaptureTests.checkCall(stream: 1, trace: "0123456789abcde")
        let client = try PlaintextCapture.bytes([DissectorCaptureTests.hello()]) + call.client
        let server = try PlaintextCapture.bytes([DissectorCaptureTests.hello()]) + call.server
        // Both sides in small segments, taking turns: the server's hello starts before the client's is whole.
        for offset in stride(from: 0, to: max(client.count, server.count), by: segmentSize) {
            if offset < client.count {
                capture.send(
                    Array(client[offset..<min(offset + segmentSize, client.count)]), on: &connection, fromClient: true)
            }
            if offset < server.count {
                capture.send(
                    Array(server[offset..<min(offset + segmentSize, server.count)]), on: &connection, fromClient: false)
            }
        }
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark([
            "-r", directory.path("capture.pcap"), "-T", "fields", "-e", "tcp.srcport", "-e", "_ws.col.Info",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map { String($0) }
        let client40010 = lines.filter { $0.hasPrefix("40010\t") }.joined(separator: ", ")
        let server7001 = lines.filter { $0.hasPrefix("7001\t") }.joined(separator: ", ")
        #expect(client40010.contains("hello v1 tokenet/1"), "\(result.stdout)")
        #expect(client40010.contains("1 call_start \(DissectorCaptureTests.check)"), "\(result.stdout)")
        #expect(client40010.contains("1 half_close"), "\(result.stdout)")
        #expect(server7001.contains("hello v1 tokenet/1"), "\(result.stdout)")
        #expect(server7001.contains("1 status OK"), "\(result.stdout)")
        #expect(!result.stdout.contains("malformed"), "\(result.stdout)")
    }

    /// Payloads that are not Tokenet, each the first segment of its connection: what tshark shows of them must not
    /// change when the heuristic is on. A heuristic that waited for more bytes whenever a payload began like a hello
    /// (a length within the limit, then 0x12) would hold these back and show them as segments of a Tokenet frame.
    @Test func otherTrafficIsNotClaimed() async throws {
        var capture = PlaintextCapture()
        for (index, payload) in Self.notTokenet.enumerated() {
            var connection = capture.connect(clientPort: UInt16(41000 + index))
            capture.send(payload, on: &connection, fromClient: true)
            capture.send(Array("after".utf8), on: &connection, fromClient: true)
        }
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let fields = ["-T", "fields", "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.col.Info"]
        let on = try await DissectorCaptureTests.shark(
            ["-r", directory.path("capture.pcap"), "-Y", "tcp.len > 0"] + fields)
        let off = try await DissectorCaptureTests.shark(
            ["-r", directory.path("capture.pcap"), "-Y", "tcp.len > 0", "-o", "tokenet.heuristic:FALSE"] + fields)
        #expect(on.status == 0 && off.status == 0, "\(on.stderr)\(off.stderr)")
        #expect(on.stdout.split(separator: "\n").count == 2 * Self.notTokenet.count, "\(on.stdout)")
        #expect(!on.stdout.contains("tokenet"), "\(on.stdout)")
        #expect(on.stdout == off.stdout, "with the heuristic:\n\(on.stdout)\nwithout:\n\(off.stdout)")
    }

    /// A payload that begins like a hello, in one-byte segments: the bytes that could still be a hello are held,
    /// and handed on whole (here to Data) at the first byte that cannot be; none shows as Tokenet, none is lost. With
    /// TCP's reassembly turned off nothing can be held: those first bytes were claimed and shown as nothing.
    @Test(arguments: [[], ["-o", "tcp.desegment_tcp_streams:FALSE"]])
    func bytesHeldForAHelloThatIsNotOneAreHandedOn(options: [String]) async throws {
        // A length, a hello (0x12) of the right size, then field 1 (protocol_version) sent as bytes: not a Hello.
        let payload: [UInt8] = [0, 0, 0, 0x20, 0x12, 0x1E, 0x0A, 0x1C] + Array("not a hello, but close".utf8)
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 42000)
        for byte in payload { capture.send([byte], on: &connection, fromClient: true) }
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let tokenet = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap")] + options)
        #expect(tokenet.status == 0, "\(tokenet.stderr)")
        #expect(tokenet.stdout.isEmpty, "\(tokenet.stdout)")
        let data = try await DissectorCaptureTests.shark(
            ["-r", directory.path("capture.pcap"), "-Y", "tcp.len > 0", "-T", "fields", "-e", "data.data"] + options)
        #expect(data.status == 0, "\(data.stderr)")
        let shown = data.stdout.filter { $0.isHexDigit }
        #expect(shown == payload.map { String(format: "%02x", $0) }.joined(), "\(data.stdout)")
    }

    /// Not Tokenet: each would be taken for a hello, or the start of one, by a heuristic that looked at its first
    /// bytes only.
    static let notTokenet: [[UInt8]] = {
        var generator = SeededBytes(seed: 0x7040_0E7E)
        let hello = try! PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        return [
            Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:7001\r\nAccept: */*\r\n\r\n".utf8),
            // A TLS ClientHello record sent to a port that is not TLS's.
            [0x16, 0x03, 0x01, 0x00, 0x3A, 0x01, 0x00, 0x00, 0x36, 0x03, 0x03] + generator.next(32)
                + [0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00, 0x00, 0x0B, 0x00, 0x2B, 0x00, 0x03, 0x02, 0x03, 0x04],
            generator.next(64),
            // Frames of 4096 bytes, longer than what is here, which a heuristic must not wait for: a length within the
            // limit and 0x12 (hello), then a hello size that does not fill the frame,
            [0, 0, 0x10, 0, 0x12, 0x05] + generator.next(40),
            // the right size, then a field key that is not one of Hello's,
            [0, 0, 0x10, 0, 0x12, 0xFD, 0x1F, 0x2A] + generator.next(40),
            // a protocol_version, settings holding a field that is not one of Settings' (field 1 as bytes), an agent,
            [0, 0, 0x10, 0, 0x12, 0xFD, 0x1F, 0x08, 0x01, 0x12, 0x02, 0x0A, 0x00, 0x1A, 0x09]
                + Array("tokenet/1".utf8),
            // a protocol_version whose varint runs past 10 bytes.
            [0, 0, 0x10, 0, 0x12, 0xFD, 0x1F, 0x08] + [UInt8](repeating: 0xFF, count: 11),
            // A whole hello followed, inside its frame, by a stream id: a hello is on stream 0, which is left out.
            Array(hello[0..<3]) + [hello[3] + 2] + Array(hello[4...]) + [0x08, 0x01],
            // A length above the limit (4 MiB), then 0x12.
            [0, 0x40, 0, 1, 0x12, 0x00],
            // A length of 0: an empty frame, which is never a hello.
            [0, 0, 0, 0, 0x12, 0x00],
        ]
    }()
}

/// Pseudo-random bytes from a fixed seed (SplitMix64), so that a failure can be run again with the same bytes.
struct SeededBytes {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
    }
}
