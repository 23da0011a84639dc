import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// The dissector and the diagram on captures written byte for byte (`PlaintextCapture`): segments a live capture
/// rarely shows, frames that are not well formed, and captures that are not what the tools expect. Needs tshark
/// (Tools/setup installs it), but no root.
@Suite struct DissectorCaptureTests {
    static let check = "/tokenet.health.v1.Health/Check"

    static func hello() -> WireV1.Frame {
        var hello = WireV1.Hello()
        hello.protocolVersion = 1
        hello.agent = "tokenet/1"
        return WireV1.Frame(streamID: 0, kind: .hello(hello))
    }

    /// A Health/Check call's frames from the client and from the server, with `trace` as its trace id.
    static func checkCall(stream: UInt32, trace: String) throws -> (client: [UInt8], server: [UInt8]) {
        let start = WireV1.CallStart(
            method: check, metadata: [WireV1.MetadataEntry(key: "tokenet-trace-id", value: .text(trace))])
        var response = HealthV1.HealthCheckResponse()
        response.status = .serving
        let client = try PlaintextCapture.bytes([
            WireV1.Frame(streamID: stream, kind: .callStart(start)),
            WireV1.Frame(streamID: stream, kind: .message(WireV1.Message(data: Data()))),
            WireV1.Frame(streamID: stream, kind: .halfClose(WireV1.HalfClose())),
        ])
        let server = try PlaintextCapture.bytes([
            WireV1.Frame(streamID: stream, kind: .message(WireV1.Message(data: try response.serializedData()))),
            WireV1.Frame(streamID: stream, kind: .status(WireV1.Status())),
        ])
        return (client, server)
    }

    static func shark(_ arguments: [String]) async throws -> ProcessResult {
        try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(
                executable: URL(fileURLWithPath: PackageRoot.path("Tools/dissector/tokenet-shark")), arguments
            ).waitForExit(limit: 120)
        }
    }

    static func diagram(_ arguments: [String]) async throws -> ProcessResult {
        try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(
                executable: URL(fileURLWithPath: "/usr/bin/python3"),
                [PackageRoot.path("Tools/dissector/tokenet-diagram")] + arguments
            ).waitForExit(limit: 120)
        }
    }

    /// A hello whose protocol_version is length-delimited instead of a varint stopped the Lua script ("calling 'add'
    /// on bad self"): the packet showed as bare TCP, with a Lua error in its tree instead of the frame.
    @Test func aFieldOfTheWrongWireTypeIsShownNotALuaError() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40001)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: true)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: false)
        // Frame { hello (2) { protocol_version (1) as bytes of length 0 } }
        capture.send([0, 0, 0, 4, 0x12, 0x02, 0x0A, 0x00], on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await Self.shark(["-r", directory.path("capture.pcap"), "-V", "-O", "tokenet"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("Lua Error"), "\(result.stdout)")
        #expect(result.stdout.components(separatedBy: "Kind: hello").count == 4, "\(result.stdout)")
    }

    /// A node on a port that Wireshark registers for another protocol (21064 is dlm3's; a demo issuer-node drew
    /// it) went to that protocol before any heuristic could find the hello: every call to that node was missing
    /// from the packets and from the diagram, without a word.
    @Test func aNodeOnAnotherProtocolsPortIsFoundByItsHello() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40003, serverPort: 21064)
        let call = try Self.checkCall(stream: 1, trace: "0123456789abcde")
        capture.send(try PlaintextCapture.bytes([Self.hello()]) + call.client, on: &connection, fromClient: true)
        capture.send(try PlaintextCapture.bytes([Self.hello()]) + call.server, on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let packets = try await Self.shark(["-r", directory.path("capture.pcap")])
        #expect(packets.status == 0, "\(packets.stderr)")
        #expect(packets.stdout.contains("1 call_start \(Self.check)"), "\(packets.stdout)")
        let diagram = try await Self.diagram(["--format", "text", directory.path("capture.pcap")])
        #expect(diagram.status == 0, "\(diagram.stderr)")
        #expect(diagram.stdout.contains("127.0.0.1:40003 <- 127.0.0.1:21064  OK"), "\(diagram.stdout)")
    }

    /// A key log that is a directory was handed to tshark, which decrypted nothing without a word; an empty one
    /// (SSLKEYLOGFILE exported after the nodes started) likewise.
    @Test func aKeyLogThatHoldsNoSecretsIsNamed() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40004)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let folder = try await Self.shark(["--keylog", directory.url.path, "-r", directory.path("capture.pcap")])
        #expect(folder.status == 2, "\(folder.stderr)")
        #expect(folder.stderr.hasPrefix("tokenet-shark: the key log \(directory.url.path) is a directory"))
        try Data().write(to: URL(fileURLWithPath: directory.path("keys.log")))
        let empty = try await Self.shark(["--keylog", directory.path("keys.log"), "-r", directory.path("capture.pcap")])
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.contains("hello v1 tokenet/1"), "\(empty.stdout)")
        #expect(
            empty.stderr.hasPrefix(
                "tokenet-shark: the key log \(directory.path("keys.log")) is empty, so no TLS traffic can be decrypted"),
            "\(empty.stderr)")
    }

    /// A capture named without -r made tshark capture live, taking the name for a capture filter: an existing file
    /// is pointed to -r, and a mistyped one is named as missing, before tshark starts.
    @Test func aCaptureNamedWithoutReadIsNotTakenForALiveCapture() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40005)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let existing = try await Self.shark([directory.path("capture.pcap")])
        #expect(existing.status == 2, "\(existing.stderr)")
        #expect(
            existing.stderr.hasPrefix("tokenet-shark: to read the capture \(directory.path("capture.pcap")), write -r"),
            "\(existing.stderr)")
        for name in [directory.path("captur.pcap"), "capture.pcapng"] {
            let missing = try await Self.shark([name])
            #expect(missing.status == 2, "\(missing.stderr)")
            #expect(
                missing.stderr == "tokenet-shark: there is no capture \(name); to read one, write -r FILE\n",
                "\(missing.stderr)")
        }
    }

    /// The live tap is started before the nodes whose key log it names: refusing a key log that did not exist yet
    /// ("cannot read the key log") stopped the tap, though tshark reads the file once it is written.
    @Test(.enabled(if: geteuid() == 0, "capturing on lo needs root"))
    func aLiveTapStartsBeforeItsKeyLogIsWritten() async throws {
        let directory = try TemporaryDirectory()
        let keylog = directory.path("keys.log")
        // Stopped by tshark itself after a second, on a port nothing uses.
        let result = try await Self.shark(["--keylog", keylog, "-i", "lo", "-f", "tcp port 9", "-a", "duration:1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("tokenet-shark: the key log \(keylog) does not exist yet; TLS is decrypted once"),
            "\(result.stderr)")
    }

    /// `--help` printed a fixed range of the script's lines, which ran past its comment into `set -euo pipefail`
    /// (tokenet-shark) once the text was shorter than the range.
    @Test(arguments: ["tokenet-shark", "install"])
    func helpIsTheScriptsCommentAndNothingElse(script: String) async throws {
        let result = try await offThePool { () throws -> ProcessResult in
            try LaunchedProcess(
                executable: URL(fileURLWithPath: PackageRoot.path("Tools/dissector/\(script)")), ["--help"]
            ).waitForExit(limit: 60)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Usage: Tools/dissector/\(script) [--keylog FILE]"), "\(result.stdout)")
        #expect(!result.stdout.contains("set -euo pipefail"), "\(result.stdout)")
        #expect(!result.stdout.contains("here="), "\(result.stdout)")
    }

    /// Only a call's call_start carries its trace id: filtering on it (`tokenet.trace_id == "…"`, the flow across
    /// the nodes) found the starts of the flow's calls, never how they ended.
    @Test func aTraceIdFilterFindsEveryFrameOfItsCalls() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40005)
        let call = try Self.checkCall(stream: 1, trace: "0123456789abcde")
        capture.send(try PlaintextCapture.bytes([Self.hello()]) + call.client, on: &connection, fromClient: true)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: false)
        capture.send(call.server, on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await Self.shark([
            "-r", directory.path("capture.pcap"), "-Y", "tokenet.trace_id == \"0123456789abcde\"",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("1 call_start \(Self.check)"), "\(result.stdout)")
        #expect(result.stdout.contains("1 message response (2 bytes), 1 status OK"), "\(result.stdout)")
    }

    /// A peer may announce a max_frame_size above the 4 MiB default in its hello, and then receive frames that
    /// long: the dissector took each for "above the limit" and read the rest of the connection out of step.
    @Test func aFrameUpToTheReceiversAnnouncedLimitIsReassembled() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40006)
        var hello = WireV1.Hello()
        hello.protocolVersion = 1
        var settings = WireV1.Settings()
        settings.maxFrameSize = 8 << 20
        hello.settings = settings
        let start = WireV1.CallStart(method: "/tokenet.bench.v1.Bench/Echo", metadata: [])
        let client = try PlaintextCapture.bytes([
            WireV1.Frame(streamID: 0, kind: .hello(hello)), WireV1.Frame(streamID: 1, kind: .callStart(start)),
            WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())),
        ])
        capture.send(client, on: &connection, fromClient: true)
        var echo = BenchV1.EchoResponse()
        echo.payload = Data(count: 5 << 20)
        let large = WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try echo.serializedData())))
        let server =
            try PlaintextCapture.bytes([Self.hello()]) + FrameEncoder(maximumFrameSize: 8 << 20).encode(large)
            + PlaintextCapture.bytes([WireV1.Frame(streamID: 1, kind: .status(WireV1.Status()))])
        for offset in stride(from: 0, to: server.count, by: 60_000) {
            capture.send(Array(server[offset..<min(offset + 60_000, server.count)]), on: &connection, fromClient: false)
        }
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await Self.shark(["-r", directory.path("capture.pcap")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("1 message response (5242885 bytes), 1 status OK"), "\(result.stdout)")
        #expect(!result.stdout.contains("above the limit"), "\(result.stdout)")
    }

    /// GO_AWAY_CODE_TOO_MANY_CONNECTIONS, which a server sends to a peer over its connection limit, showed as
    /// "code 8".
    @Test func everyGoawayCodeHasItsName() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40002)
        capture.send(try PlaintextCapture.bytes([Self.hello()]), on: &connection, fromClient: true)
        var goaway = WireV1.GoAway()
        goaway.code = .tooManyConnections
        goaway.reason = "tokenet://wallet/wallet-1 holds 64 connections"
        let frames = [Self.hello(), WireV1.Frame(streamID: 0, kind: .goaway(goaway))]
        capture.send(try PlaintextCapture.bytes(frames), on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await Self.shark(["-r", directory.path("capture.pcap")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("goaway TOO_MANY_CONNECTIONS last=0 \"tokenet://wallet"), "\(result.stdout)")
    }
}
