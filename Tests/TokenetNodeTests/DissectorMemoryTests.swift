import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// The memory the dissector takes for a large message masked whole (a capture written byte for byte,
/// `PlaintextCapture`; needs tshark and /usr/bin/time, not root).
@Suite struct DissectorMemoryTests {
    /// A field the type does not have is masked whole, and each of its bytes was noted in a table of its own: a
    /// 4 MiB message took tshark to 845 MB. Here 3 MiB, whose field is one run.
    @Test func aLargeFieldMaskedWholeTakesLittleMemory() async throws {
        let size = 3 << 20
        // EchoResponse has field 1 alone: field 9, length-delimited, is another type's.
        var data = Data([0x4A])
        var length = size
        while length >= 0x80 {
            data.append(UInt8(length & 0x7F) | 0x80)
            length >>= 7
        }
        data.append(UInt8(length))
        data.append(Data(repeating: 0x41, count: size))
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40071)
        let start = WireV1.CallStart(method: "/tokenet.bench.v1.Bench/Echo")
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(), WireV1.Frame(streamID: 1, kind: .callStart(start)),
            ]), on: &connection, fromClient: true)
        let server =
            try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
            + FrameEncoder().encode(WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: data))))
        for offset in stride(from: 0, to: server.count, by: 60_000) {
            capture.send(Array(server[offset..<min(offset + 60_000, server.count)]), on: &connection, fromClient: false)
        }
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let result = try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(
                executable: URL(fileURLWithPath: "/usr/bin/time"),
                [
                    "-f", "peak %M KiB", PackageRoot.path("Tools/dissector/tokenet-shark"), "-r",
                    path, "-V", "-O", "tokenet",
                ]
            ).waitForExit(limit: 300)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("fields of another type masked"), "\(result.stdout.prefix(4000))")
        let peak = result.stderr.split(separator: "\n").last { $0.hasPrefix("peak ") }
        let kibibytes = peak.flatMap { Int($0.split(separator: " ")[1]) } ?? Int.max
        #expect(kibibytes < 400_000, "\(result.stderr)")
    }
}
