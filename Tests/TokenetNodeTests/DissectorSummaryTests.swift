import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// The dissector's one-line summary (the Info column) and its malformed-frame marks on captures written byte for
/// byte (`PlaintextCapture`; needs tshark, not root).
@Suite struct DissectorSummaryTests {
    /// Frames whose first bytes came in an earlier segment: the summary ran on from another dissector's text with no
    /// separator ("(PROTOBUF) tokenet.health.v1.HealthCheckRequest1 message request"), since each later dissection
    /// in the packet took the protocol column for the mark of the first.
    @Test func framesSplitAcrossSegmentsShowOneCleanSummary() async throws {
        // A request the protobuf dissector decodes (and names in the Info column) in the middle of the frames.
        let request = try HealthV1.HealthCheckRequest(service: "tokenet.tsp.v1.Provisioning").serializedData()
        let client = try PlaintextCapture.bytes([
            WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: DissectorCaptureTests.check))),
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: request))),
            WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())),
        ])
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40031)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        capture.send(Array(client.prefix(5)), on: &connection, fromClient: true)
        capture.send(Array(client.dropFirst(5)), on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap")])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(
            result.stdout.split(separator: "\n").first { $0.contains("call_start") }, "\(result.stdout)")
        #expect(
            line.hasSuffix(
                " Tokenet \(line.split(separator: " ").dropFirst(6).first ?? "") 1 call_start "
                    + "\(DissectorCaptureTests.check), 1 message request (\(request.count) bytes), 1 half_close"),
            "\(line)")
    }

    /// A message frame whose data length is cut off is malformed, as `tokenet decode` and the nodes have it: it
    /// showed as "7 message  (0 bytes)" with no mark.
    @Test func aMessageWhoseOwnFieldsDoNotReadIsMalformed() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40032)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        // stream 7, message { data: a length of two varint bytes that never end }
        capture.send([0, 0, 0, 7, 0x08, 0x07, 0x22, 0x03, 0x0A, 0xFF, 0xFF], on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark([
            "-r", directory.path("capture.pcap"), "-V", "-O", "tokenet",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Tokenet: malformed frame (message: truncated length)"), "\(result.stdout)")
        #expect(result.stdout.contains("Not a Frame: message: truncated length"), "\(result.stdout)")
    }

    /// A message of a call whose call_start is not in the capture has no direction to show: its summary read
    /// "7 message  (2 bytes)", with two spaces.
    @Test func aMessageOfAnUnknownCallHasOneSpaceBeforeItsSize() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40033)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        capture.send(
            try PlaintextCapture.bytes([WireV1.Frame(streamID: 7, kind: .message(WireV1.Message(data: Data([8, 1]))))]),
            on: &connection, fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(" 7 message (2 bytes)"), "\(result.stdout)")
    }
}
