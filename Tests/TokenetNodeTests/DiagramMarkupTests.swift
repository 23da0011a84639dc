import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// What a peer sends reaches the Mermaid diagram as text, never as markup or configuration (captures written byte
/// for byte, `PlaintextCapture`; needs tshark, not root).
@Suite struct DiagramMarkupTests {
    /// A method and a status message with HTML in them passed into the Mermaid text as sent: a page that renders
    /// the diagram ran the status message's `onerror`. A `%%{init: …}%%` directive anywhere in the text reconfigured
    /// the whole diagram.
    @Test func htmlAndDirectivesFromAPeerAreWrittenAsEntities() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40051)
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        let start = WireV1.CallStart(method: "/evil.Svc/M<b>x</b>&amp")
        capture.send(
            try hello + PlaintextCapture.bytes([WireV1.Frame(streamID: 1, kind: .callStart(start))]), on: &connection,
            fromClient: true)
        var status = WireV1.Status()
        status.code = .invalidArgument
        status.message = "<img src=x onerror=alert(1)> %%{init: {}}%%"
        capture.send(
            try hello + PlaintextCapture.bytes([WireV1.Frame(streamID: 1, kind: .status(status))]), on: &connection,
            fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let result = try await DissectorCaptureTests.diagram([path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(": evil.Svc/M#60;b#62;x#60;/b#62;#38;amp\n"), "\(result.stdout)")
        #expect(
            result.stdout.contains(": INVALID_ARGUMENT: #60;img src=x onerror=alert(1)#62; #37;#37;{init: {}}#37;#37;"),
            "\(result.stdout)")
        for raw in ["<b>", "<img", "&amp", "%%"] {
            #expect(!result.stdout.contains(raw), "\(raw) in \(result.stdout)")
        }
    }

    /// A plaintext connection whose hello is not in the capture (it was made before the capture began) was left out
    /// of the diagram without a word, where TLS connections that cannot be read are counted: it is counted too, with
    /// its ends and the option that decodes it.
    @Test func aPlaintextConnectionWithoutItsHelloIsCounted() async throws {
        var capture = try DiagramCaptureTests.twoCalls()
        var late = capture.connect(clientPort: 40052, handshake: false)
        let call = try DissectorCaptureTests.checkCall(stream: 5, trace: "0000000000000f7")
        capture.send(call.client, on: &late, fromClient: true)
        capture.send(call.server, on: &late, fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let result = try await DissectorCaptureTests.diagram(["--format", "text", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("trace 0000000000000f2"), "\(result.stdout)")
        #expect(
            result.stderr
                == "tokenet-diagram: warning, calls may be missing: 1 connection in the clear "
                + "(127.0.0.1:40052-127.0.0.1:7001) shows no Tokenet frame: a plaintext-mode connection made before "
                + "the capture began has no hello to be found by, and --plaintext-port PORT (the node's port) "
                + "decodes it\n", "\(result.stderr)")
        let named = try await DissectorCaptureTests.diagram(["--format", "text", "--plaintext-port", "7001", path])
        #expect(named.stderr.isEmpty, "\(named.stderr)")
        #expect(named.stdout.contains("trace 0000000000000f7"), "\(named.stdout)")
    }

    /// Other plaintext traffic in the capture (an HTTP request to another server) was counted as a Tokenet
    /// connection made before the capture began: one whose SYN is in the capture would show its hello.
    @Test func otherPlaintextTrafficOpenedInTheCaptureIsNotCounted() async throws {
        var capture = try DiagramCaptureTests.twoCalls()
        var web = capture.connect(clientPort: 40053, serverPort: 8080)
        capture.send(Array("GET / HTTP/1.1\r\nHost: example\r\n\r\n".utf8), on: &web, fromClient: true)
        capture.send(Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8), on: &web, fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let result = try await DissectorCaptureTests.diagram(["--format", "text", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("trace 0000000000000f2"), "\(result.stdout)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }
}
