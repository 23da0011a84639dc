import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// What `tokenet decode` masks in frames beside a card number: a type only `--method` suggests, the frame's own
/// text, status details and binary metadata, by the rule the dissector follows.
@Suite struct DecodeMaskingTests {
    static func hex(_ frames: [WireV1.Frame]) throws -> String {
        try frames.flatMap { try FrameEncoder().encode($0) }.map { String(format: "%02x", $0) }.joined()
    }

    /// An ActivateDigitalCardRequest read as SelectCard's response decodes cleanly (both have text fields 1 and 2),
    /// and showed its access token as the selected card's reference.
    @Test func aTypeGuessedFromTheMethodShowsNoTextOrBytes() async throws {
        let request = TspV1.ActivateDigitalCardRequest(digitalCardID: "dc-1", accessToken: "eyJhbGciOi.secret")
        let hex = try Self.hex([
            WireV1.Frame(streamID: 5, kind: .message(WireV1.Message(data: try request.serializedData())))
        ])
        let result = try await runTokenet(
            ["decode", "--hex", "--method", "/tokenet.wallet.v1.WalletSelection/SelectCard"], stdin: hex)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("secret") && !result.stdout.contains("dc-1"), "\(result.stdout)")
        #expect(result.stdout.contains("\"selectedCardRef\": \"***\""), "\(result.stdout)")
        #expect(
            result.stderr.contains(
                "decode: note: the messages on stream 5 are read as tokenet.wallet.v1.SelectionResponse by --method "
                    + "alone"), "\(result.stderr)")
    }

    /// An issuer app's activation by its otp:// link: the link carries the activation code, and shows as asterisks
    /// as the code does.
    @Test func anActivationLinkIsMasked() async throws {
        let request = IssuerV1.AppActivateRequest(
            displayName: "Credit", link: "otp://p?u=tsp&n=ch-chloe&c=QWERTY2345&r=ref-1")
        let hex = try Self.hex([
            WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))),
            WireV1.Frame(
                streamID: 3, kind: .callStart(WireV1.CallStart(method: "/tokenet.issuer.v1.IssuerAppAuth/Activate"))),
            WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: try request.serializedData()))),
        ])
        let result = try await runTokenet(["decode", "--hex"], stdin: hex)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"link\": \"***\""), "\(result.stdout)")
        #expect(!result.stdout.contains("QWERTY2345"), "\(result.stdout)")
    }

    /// A status message whose bytes happen to read as protobuf fields is a node's text, shown as the dissector
    /// shows it; a detail of a type Protos/ do not have, and a binary metadata value, show nothing of their bytes.
    @Test func aStatusShowsItsTextAndWithholdsWhatCannotBeTold() async throws {
        let text = "App number digits sent lost card expired request to!"
        let card = try WalletV1.ManualCard(pan: "4761000010000009", expiry: "12/29", cvc: "987").serializedData()
        let status = WireV1.Status(
            code: .internal, message: text,
            details: [WireV1.StatusDetail(type: "evil.v1.CardInfo", value: card)],
            trailers: [WireV1.MetadataEntry(key: "x-bin", value: .binary(card))])
        let hex = try Self.hex([WireV1.Frame(streamID: 1, kind: .status(status))])
        let result = try await runTokenet(["decode", "--hex"], stdin: hex)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"message\": \"\(text)\""), "\(result.stdout)")
        #expect(result.stdout.contains("\"withheldBytes\": \(card.count)"), "\(result.stdout)")
        #expect(result.stdout.contains("\"binary\": \"***\""), "\(result.stdout)")
        #expect(!result.stdout.contains(card.base64EncodedString()), "\(result.stdout)")
    }
}
