import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// Messages whose type the dissector cannot know, or that do not fit the type their call gives them: a security
/// code in them showed in clear, in the tree's hex and in the exports, where the card number beside it was masked
/// (captures written byte for byte, `PlaintextCapture`; needs tshark, not root).
@Suite struct DissectorWithheldTests {
    static let addCard = "/tokenet.wallet.v1.WalletControl/AddCard"

    /// An AddCardRequest with security code 123, whose bytes are `1a03313233` on the wire.
    static func request() throws -> Data {
        try WalletV1.AddCardRequest(
            source: .manual(WalletV1.ManualCard(pan: "4761000010000009", expiry: "12/29", cvc: "123"))
        ).serializedData()
    }

    /// The tree (`-V`) and the tokenet and protobuf fields of PDML: Wireshark's own TCP payload is left out, as the
    /// README says it shows the bytes as sent.
    static func shown(_ capture: PlaintextCapture) async throws -> (tree: String, pdml: String) {
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let tree = try await DissectorCaptureTests.shark([
            "-r", directory.path("capture.pcap"), "-V", "-O", "tokenet,protobuf",
        ])
        #expect(tree.status == 0, "\(tree.stderr)")
        let pdml = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap"), "-T", "pdml"])
        #expect(pdml.status == 0, "\(pdml.stderr)")
        let fields = pdml.stdout.split(separator: "\n").filter {
            $0.contains("name=\"tokenet") || $0.contains("name=\"pbf") || $0.contains("name=\"protobuf")
        }
        return (tree.stdout, fields.joined(separator: "\n"))
    }

    @Test func aMessageOfAnUnknownCallHasItsBytesWithheld() async throws {
        let data = try Self.request()
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40041)
        capture.send(try PlaintextCapture.bytes([DissectorCaptureTests.hello()]), on: &connection, fromClient: true)
        capture.send(
            try PlaintextCapture.bytes([
                // No call_start for stream 7; a method no .proto file has for stream 9.
                WireV1.Frame(streamID: 7, kind: .message(WireV1.Message(data: data))),
                WireV1.Frame(streamID: 9, kind: .callStart(WireV1.CallStart(method: "/evil.v1.Svc/Method"))),
                WireV1.Frame(streamID: 9, kind: .message(WireV1.Message(data: data))),
            ]), on: &connection, fromClient: true)
        let shown = try await Self.shown(capture)
        for text in [shown.tree, shown.pdml] {
            #expect(!text.contains("313233") && !text.contains("31:32:33"), "\(text)")
            #expect(!text.contains("card data masked"), "\(text)")
        }
        #expect(
            shown.tree.contains(
                "Message data: \(data.count) bytes withheld (type not known: its call_start is not in the capture)"),
            "\(shown.tree)")
        #expect(
            shown.tree.contains(
                "Message data: \(data.count) bytes withheld (type not known: this build's Protos/ have no method "
                    + "/evil.v1.Svc/Method)"), "\(shown.tree)")
    }

    /// The request sent back as the call's response: AddCardResponse's field 1 is text, and the request's card,
    /// read into it, is a message whose security code no field name marks. A text field that reads as a message is
    /// masked whole.
    @Test func aMessageInATextFieldIsMaskedWhole() async throws {
        let data = try Self.request()
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40042)
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(),
                WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: Self.addCard))),
            ]), on: &connection, fromClient: true)
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(), WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: data))),
            ]), on: &connection, fromClient: false)
        let shown = try await Self.shown(capture)
        for text in [shown.tree, shown.pdml] {
            #expect(!text.contains("313233") && !text.contains("31:32:33"), "\(text)")
        }
        #expect(shown.tree.contains("1 message response"), "\(shown.tree)")
        // Masked by a guess at what the field holds, not as card data.
        #expect(shown.tree.contains(" (fields of another type masked)"), "\(shown.tree)")
        #expect(!shown.tree.contains("card data masked"), "\(shown.tree)")
    }

    /// Messages of a known type whose bytes do not parse as it: a ManualCard with a stray byte at its end, and a
    /// request with a field that runs past its end. The protobuf dissector read the security code before the
    /// fault, and the fallback masked card numbers only.
    @Test func aMessageThatDoesNotParseAsItsTypeIsWithheld() async throws {
        let card = try WalletV1.ManualCard(pan: "4761000010000009", expiry: "12/29", cvc: "123").serializedData()
        let brokenCard = Data([0x0a, UInt8(card.count + 1)]) + card + Data([0xff])
        let truncated = try Self.request() + Data([0x0a, 0x40])
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40043)
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(),
                WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: Self.addCard))),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: brokenCard))),
                WireV1.Frame(streamID: 3, kind: .callStart(WireV1.CallStart(method: Self.addCard))),
                WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: truncated))),
            ]), on: &connection, fromClient: true)
        let shown = try await Self.shown(capture)
        for text in [shown.tree, shown.pdml] {
            #expect(!text.contains("313233") && !text.contains("31:32:33"), "\(text)")
            #expect(!text.contains("cvc"), "\(text)")
        }
        for size in [brokenCard.count, truncated.count] {
            #expect(
                shown.tree.contains(
                    "Message data: \(size) bytes withheld (they do not parse as tokenet.wallet.v1.AddCardRequest)"),
                "\(shown.tree)")
        }
    }

    /// A status detail's value of a type Protos/ do not have: its secrets cannot be told apart, as a message's.
    @Test func aDetailOfAnUnknownTypeIsWithheld() async throws {
        let detail = WireV1.StatusDetail(type: "evil.v1.CardInfo", value: try Self.request())
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40044)
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(),
                WireV1.Frame(streamID: 1, kind: .status(WireV1.Status(code: .internal, details: [detail]))),
            ]), on: &connection, fromClient: false)
        let shown = try await Self.shown(capture)
        for text in [shown.tree, shown.pdml] {
            #expect(!text.contains("313233") && !text.contains("31:32:33"), "\(text)")
        }
        #expect(
            shown.tree.contains("Detail value: \(detail.value.count) bytes withheld (type not known)"),
            "\(shown.tree)")
    }

    /// A binary metadata value showed its bytes in hex, masked for card numbers only: a credential in it showed.
    @Test func binaryMetadataIsWithheld() async throws {
        let entry = WireV1.MetadataEntry(key: "x-card-bin", value: .binary(try Self.request()))
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40045)
        capture.send(
            try PlaintextCapture.bytes([
                DissectorCaptureTests.hello(),
                WireV1.Frame(
                    streamID: 1, kind: .callStart(WireV1.CallStart(method: Self.addCard, metadata: [entry]))),
            ]), on: &connection, fromClient: true)
        let shown = try await Self.shown(capture)
        for text in [shown.tree, shown.pdml] {
            #expect(!text.contains("313233") && !text.contains("31:32:33"), "\(text)")
        }
        let size = try Self.request().count
        #expect(shown.tree.contains("Metadata: x-card-bin: (\(size) bytes withheld)"), "\(shown.tree)")
        #expect(shown.tree.contains("Metadata binary value withheld (bytes): \(size)"), "\(shown.tree)")
    }
}
