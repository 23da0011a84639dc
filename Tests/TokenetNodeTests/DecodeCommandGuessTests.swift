import Foundation
import Testing
import TokenetTestSupport
import TokenetWire

/// `tokenet decode` on the bytes a capture of a CLI command gives: other calls' streams beside the one `--method`
/// names, card numbers in operator requests, and TLS records followed as TCP.
@Suite struct DecodeCommandGuessTests {
    /// The server's side of a `tokenet call … Health/Check`: the CLI's reflection lookup on stream 1, then the
    /// call itself on stream 3.
    static func serverSideOfACLICall() throws -> [UInt8] {
        let described = ReflectionV1.DescribeSymbolResponse(
            kind: .method, name: "tokenet.health.v1.Health.Check",
            messages: [ReflectionV1.MessageDescription(name: "tokenet.health.v1.HealthCheckRequest")])
        var response = HealthV1.HealthCheckResponse()
        response.status = .serving
        let frames: [WireV1.Frame] = [
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try described.serializedData()))),
            WireV1.Frame(streamID: 1, kind: .status(WireV1.Status())),
            WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: try response.serializedData()))),
            WireV1.Frame(streamID: 3, kind: .status(WireV1.Status())),
        ]
        return try frames.flatMap { try FrameEncoder().encode($0) }
    }

    /// The reflection answer read as a HealthCheckResponse printed a status the node never sent (its field 1, the
    /// symbol kind, read as the serving status), with exit status 0.
    @Test func aStreamTheMethodDoesNotFitIsShownUndecodedWithANote() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("server.bin")
        try Data(try Self.serverSideOfACLICall()).write(to: URL(fileURLWithPath: file))
        let result = try await runTokenet(["decode", "--method", "tokenet.health.v1.Health/Check", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("NOT_SERVING"), "\(result.stdout)")
        #expect(result.stdout.contains("\"status\": \"SERVING_STATUS_SERVING\""), "\(result.stdout)")
        // Stream 1's message shows its length alone, and the note says why, once.
        #expect(
            result.stdout.contains("\"streamId\": 1,\n  \"message\": {\n    \"withheldBytes\": "), "\(result.stdout)")
        let note = "decode: note: the messages on stream 1 are not tokenet.health.v1.HealthCheckResponse"
        #expect(result.stderr.components(separatedBy: note).count == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--calls"), "\(result.stderr)")
    }

    @Test func aCardNumberInADecodedRequestIsMasked() async throws {
        let request = WalletV1.AddCardRequest(
            source: .manual(WalletV1.ManualCard(pan: "4111111111111111", expiry: "12/30")))
        let frames: [WireV1.Frame] = [
            WireV1.Frame(
                streamID: 1, kind: .callStart(WireV1.CallStart(method: "/tokenet.wallet.v1.WalletControl/AddCard"))),
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try request.serializedData()))),
        ]
        let bytes = try frames.flatMap { try FrameEncoder().encode($0) }
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let framesResult = try await runTokenet(["decode", "--hex"], stdin: hex)
        #expect(framesResult.status == 0, "\(framesResult.stderr)")
        #expect(framesResult.stdout.contains("\"pan\": \"************1111\""), "\(framesResult.stdout)")
        #expect(!framesResult.stdout.contains("4111111111111111"), "\(framesResult.stdout)")

        let messageHex = try request.serializedBytes().map { String(format: "%02x", $0) }.joined()
        let one = try await runTokenet(
            ["decode", "--hex", "--type", "tokenet.wallet.v1.AddCardRequest"], stdin: messageHex)
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout.contains("************1111"), "\(one.stdout)")
        #expect(!one.stdout.contains("4111111111111111"), "\(one.stdout)")
    }

    /// A TCP follow of a TLS connection was taken for a plaintext peer of a TLS node ("--plaintext must be given
    /// to both or neither"), which says nothing about how to get the decrypted bytes.
    @Test func tlsRecordsAreNamedAsStillEncrypted() async throws {
        for arguments in [["--hex"], ["--hex", "--calls", "-"]] {
            let directory = try TemporaryDirectory()
            let server = directory.path("server.hex")
            try "0000000412020801".write(toFile: server, atomically: true, encoding: .utf8)
            let operands = arguments.contains("--calls") ? [server] : []
            let result = try await runTokenet(["decode"] + arguments + operands, stdin: "1703030020aabbccdd")
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("the bytes are still encrypted"), "\(result.stderr)")
            #expect(result.stderr.contains("follow,tls"), "\(result.stderr)")
            #expect(!result.stderr.contains("--plaintext"), "\(result.stderr)")
        }
    }

    /// One message given with --hex that holds fields the type lacks printed what was left ({}) and nothing else.
    @Test func fieldsTheTypeDoesNotHaveAreNoted() async throws {
        let result = try await runTokenet(
            ["decode", "--hex", "--type", "tokenet.health.v1.HealthCheckRequest"], stdin: "f80101")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{}\n", "\(result.stdout)")
        #expect(
            result.stderr.contains(
                "decode: note: the bytes hold fields tokenet.health.v1.HealthCheckRequest (or a message in it) does "
                    + "not have"),
            "\(result.stderr)")
    }

    /// The messages of a call whose call_start is in the input, for a method this build does not know, are shown
    /// undecoded with a note that names the method: the note said the call_start was missing and to give --calls,
    /// which was already given.
    @Test func aMethodThisBuildDoesNotKnowIsNamed() async throws {
        let start = WireV1.CallStart(method: "/unknown.v1.Svc/Method")
        let client: [WireV1.Frame] = [
            WireV1.Frame(streamID: 3, kind: .callStart(start)),
            WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: Data([0x08, 0x01])))),
        ]
        let server: [WireV1.Frame] = [
            WireV1.Frame(streamID: 3, kind: .message(WireV1.Message(data: Data([0x08, 0x02]))))
        ]
        let directory = try TemporaryDirectory()
        let clientFile = directory.path("client.bin")
        let serverFile = directory.path("server.bin")
        try Data(try client.flatMap { try FrameEncoder().encode($0) }).write(to: URL(fileURLWithPath: clientFile))
        try Data(try server.flatMap { try FrameEncoder().encode($0) }).write(to: URL(fileURLWithPath: serverFile))
        let note =
            "decode: note: the messages of '/unknown.v1.Svc/Method' (stream 3 first) are shown by their length alone: "
            + "this build "
            + "does not know that method (a peer built from newer .proto files?)\n"
        for arguments in [[clientFile], ["--calls", clientFile, serverFile]] {
            let result = try await runTokenet(["decode"] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.contains("\"withheldBytes\": 2"), "\(arguments): \(result.stdout)")
            #expect(result.stderr == note, "\(arguments): \(result.stderr)")
        }
    }

    /// Standard input can be one of the two sides, not both: the second read found it empty, and the command went
    /// on as if the server's side held nothing.
    @Test func bothSidesFromStandardInputAreRefused() async throws {
        for arguments in [["--calls", "-", "-"], ["--calls", "/dev/stdin", "-"]] {
            let result = try await runTokenet(["decode"] + arguments, stdin: "")
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains("--calls and FILE cannot both be standard input (-)"), "\(result.stderr)")
        }
    }

    /// A service, an enum or a method given as --type is named as what it is, with what to give instead.
    @Test(arguments: [
        ("tokenet.wallet.v1.WalletControl", "'tokenet.wallet.v1.WalletControl' is a service, not a message"),
        ("tokenet.wire.v1.StatusCode", "'tokenet.wire.v1.StatusCode' is an enum, not a message"),
        (
            "tokenet.health.v1.Health/Check",
            "'tokenet.health.v1.Health/Check' is a method, not a message: give its request "
                + "(tokenet.health.v1.HealthCheckRequest)"
        ),
    ])
    func aNameThatIsNoMessageIsNamedForWhatItIs(name: String, message: String) async throws {
        let result = try await runTokenet(["decode", "--type", name], stdin: "")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// One whole frame before a broken one is "1 whole frame".
    @Test func theFramesBeforeABrokenOneAreCountedInWords() async throws {
        var hello = WireV1.Hello()
        hello.protocolVersion = 1
        let bytes =
            try FrameEncoder().encode(WireV1.Frame(streamID: 0, kind: .hello(hello))) + [0, 0, 0, 2, 0xFF, 0xFF]
        let result = try await runTokenet(["decode", "--hex"], stdin: DecodeCommandTests.hex(bytes))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("frame 2 (after 1 whole frame) cannot be decoded"), "\(result.stderr)")
    }
}
