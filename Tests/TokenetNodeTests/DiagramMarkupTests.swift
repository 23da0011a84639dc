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
}
