import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

/// `tokenet decode` on bytes made with the frame encoder, as a person would feed it one side of a connection.
@Suite struct DecodeCommandTests {
    static let check = "/tokenet.health.v1.Health/Check"

    /// The client's side of a Health/Check call: hello, call_start (with a trace id), the request, half_close.
    static func clientSide() throws -> [UInt8] {
        let start = WireV1.CallStart(
            method: check, metadata: [WireV1.MetadataEntry(key: "tokenet-trace-id", value: .text("abc123def456789"))])
        var request = HealthV1.HealthCheckRequest()
        request.service = "tokenet.tsp.v1.Provisioning"
        var hello = WireV1.Hello()
        hello.protocolVersion = 1
        let frames: [WireV1.Frame] = [
            WireV1.Frame(streamID: 0, kind: .hello(hello)),
            WireV1.Frame(streamID: 1, kind: .callStart(start)),
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try request.serializedData()))),
            WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())),
        ]
        return try frames.flatMap { try FrameEncoder().encode($0) }
    }

    /// A reader that stops early (`tokenet decode big.bin | head -1`) ends the decoding, with exit status 0: the
    /// frames nobody would read are not decoded (a 64 MiB input kept a CPU busy for minutes after `head` returned).
    @Test(.timeLimit(.minutes(3))) func decodingStopsWhenNobodyReadsItsOutput() async throws {
        // Two million small frames (2^21, 16 MB), which take minutes to decode in a debug build. Doubled rather than
        // joined from two million arrays: joining them took 6 s unoptimised on an idle machine (doubling, 0.02 s), all
        // on a thread of the test runner's pool, where a loaded run found it twice 19 s apart; with another test
        // blocking the other thread, no test of the run could go on meanwhile.
        var frames = try FrameEncoder().encode(WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())))
        for _ in 0..<21 { frames += frames }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-test-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("frames.bin")
        try Data(frames).write(to: file)
        let process = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet").path, ["decode", file.path], standardInput: .nullDevice,
            standardOutput: .pipe, standardError: .nullDevice)
        let output = try #require(process.standardOutput)
        let first = try await offThePool { output.availableData }
        #expect(String(decoding: first, as: UTF8.self).contains("halfClose"))
        try output.close()
        let termination = try await offThePool { process.waitUntilExit(killingAfter: 60) }
        #expect(termination == .init(reason: .exit, status: 0), "decoding went on for nobody")
    }

    /// The server's side: its response and an OK status.
    static func serverSide() throws -> [UInt8] {
        var response = HealthV1.HealthCheckResponse()
        response.status = .serving
        let frames: [WireV1.Frame] = [
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try response.serializedData()))),
            WireV1.Frame(streamID: 1, kind: .status(WireV1.Status())),
        ]
        return try frames.flatMap { try FrameEncoder().encode($0) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        // Broken into lines of 16 bytes with spaces, as a hex dump shows them: both are ignored.
        stride(from: 0, to: bytes.count, by: 16).map { start in
            bytes[start..<min(start + 16, bytes.count)].map { String(format: "%02x", $0) }.joined(separator: " ")
        }.joined(separator: "\n")
    }

    /// A decoded message shows no card data: the card number masked to its last four digits, the security code
    /// (three digits that no number rule would catch) as "***", with the fields around them as they are.
    @Test func aDecodedCardShowsNeitherItsNumberNorItsSecurityCode() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("add-card.hex")
        let request = WalletV1.AddCardRequest(
            source: .manual(
                WalletV1.ManualCard(pan: "4761739001010010", expiry: "07/31", cvc: "837", cardholderName: "Ana")))
        try Self.hex(try request.serializedBytes()).write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", "--type", "tokenet.wallet.v1.AddCardRequest", "--hex", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"cvc\": \"***\""), "\(result.stdout)")
        #expect(result.stdout.contains("************0010") && result.stdout.contains("07/31"))
        #expect(!result.stdout.contains("837") && !result.stdout.contains("4761739001010010"))
    }

    /// A card number right after a control character: the JSON escape `\u0010` and the number made one run of
    /// digits, and masking it left `\u****…`, which no JSON parser reads. The escape is kept whole.
    @Test func maskingLeavesJSONEscapesWhole() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("request.hex")
        let request = HealthV1.HealthCheckRequest(service: "\u{10}4761739001010010")
        try Self.hex(try request.serializedBytes()).write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", "--type", "tokenet.health.v1.HealthCheckRequest", "--hex", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""service": "\u0010************0010""#), "\(result.stdout)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(parsed?["service"] as? String == "\u{10}************0010")
    }

    /// An access token (and an activation code) is a bearer credential: whoever reads it from a capture could use
    /// it while it lasts.
    @Test func anAccessTokenShowsAsAsterisks() async throws {
        let response = IssuerV1.AppLoginResponse(accessToken: "at1.eyJkZXYiOiJkLTEifQ.c2lnbmF0dXJl", deviceID: "d-1")
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.issuer.v1.AppLoginResponse", "--hex"],
            stdin: Self.hex(try response.serializedBytes()))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""accessToken": "***""#), "\(result.stdout)")
        #expect(result.stdout.contains(#""deviceId": "d-1""#), "\(result.stdout)")
    }

    /// A one-time code finishes a step-up for whoever reads it while it lasts: hidden as the logs hide it. A
    /// status's `code` is an enum, not a secret, and keeps its name.
    @Test func aOneTimeCodeShowsAsAsterisksAndAStatusCodeByName() async throws {
        let request = TspV1.SubmitOtpRequest(digitalCardID: "DNITHE1", code: "482913")
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.tsp.v1.SubmitOtpRequest", "--hex"],
            stdin: Self.hex(try request.serializedBytes()))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""code": "***""#), "\(result.stdout)")
        #expect(!result.stdout.contains("482913"), "\(result.stdout)")
        #expect(result.stdout.contains(#""digitalCardId": "DNITHE1""#), "\(result.stdout)")
        // A push receipt (text) is a bearer instrument too; the benchmark's bytes payload is not.
        let receipt = TspV1.IssuerPushReceipt(scheme: .visa, payload: "pr1.c2VjcmV0LXJlY2VpcHQ")
        let shownReceipt = try await runTokenet(
            ["decode", "--type", "tokenet.tsp.v1.IssuerPushReceipt", "--hex"],
            stdin: Self.hex(try receipt.serializedBytes()))
        #expect(shownReceipt.stdout.contains(#""payload": "***""#), "\(shownReceipt.stdout)")
        let echo = BenchV1.EchoRequest(payload: Data("plain".utf8))
        let shownEcho = try await runTokenet(
            ["decode", "--type", "tokenet.bench.v1.EchoRequest", "--hex"], stdin: Self.hex(try echo.serializedBytes()))
        #expect(shownEcho.stdout.contains(#""payload": "cGxhaW4=""#), "\(shownEcho.stdout)")
        let status = WireV1.Status(code: .notFound, message: "no such token")
        let shown = try await runTokenet(
            ["decode", "--type", "tokenet.wire.v1.Status", "--hex"], stdin: Self.hex(try status.serializedBytes()))
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains(#""code": "NOT_FOUND""#), "\(shown.stdout)")
    }

    /// A card number whose groups a tab separates: the JSON writes the tab `\t`, whose `t` ended the run before
    /// the masking read the text behind the escape.
    @Test func aCardNumberSplitByTabsIsMasked() async throws {
        let request = HealthV1.HealthCheckRequest(service: "4761\t7390\t0101\t0010")
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckRequest", "--hex"],
            stdin: Self.hex(try request.serializedBytes()))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""service": "****\t****\t****\t0010""#), "\(result.stdout)")
    }

    /// A message whose type is not known was printed as its base64, from which the security code read back in clear
    /// (the card number's digits were masked, three digits are no card number): its bytes are withheld, its length
    /// shown.
    @Test func aMessageOfUnknownTypeHasItsBytesWithheld() async throws {
        let request = WalletV1.AddCardRequest(
            source: .manual(
                WalletV1.ManualCard(pan: "4761739001010010", expiry: "07/31", cvc: "837", cardholderName: "Ana")))
        let data = try request.serializedData()
        let frames: [WireV1.Frame] = [WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: data)))]
        let result = try await runTokenet(
            ["decode", "--hex"], stdin: Self.hex(try frames.flatMap { try FrameEncoder().encode($0) }))
        #expect(result.status == 0, "\(result.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let message = try #require(parsed?["message"] as? [String: Any], "\(result.stdout)")
        #expect(message["withheldBytes"] as? Int == data.count, "\(result.stdout)")
        #expect(message["data"] == nil, "\(result.stdout)")
    }

    /// A request given where its response is expected (`--method` names the call, the file is the client's side):
    /// AddCardResponse's first field is text, and the request's ManualCard, read into it, printed the security code
    /// in clear inside that text. A text field that holds a message shows as "***".
    @Test func aMessageReadIntoATextFieldIsMasked() async throws {
        let request = WalletV1.AddCardRequest(
            source: .manual(
                WalletV1.ManualCard(pan: "4761739001010010", expiry: "07/31", cvc: "987", cardholderName: "Ana")))
        let frames: [WireV1.Frame] = [
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try request.serializedData())))
        ]
        let result = try await runTokenet(
            ["decode", "--hex", "--method", "/tokenet.wallet.v1.WalletControl/AddCard"],
            stdin: Self.hex(try frames.flatMap { try FrameEncoder().encode($0) }))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"cardRef\": \"***\""), "\(result.stdout)")
        #expect(!result.stdout.contains("987"), "\(result.stdout)")
        // Text that a person wrote is left as it is.
        let plain = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckRequest", "--hex"],
            stdin: Self.hex(try HealthV1.HealthCheckRequest(service: "tokenet.tsp.v1.Provisioning").serializedBytes()))
        #expect(plain.stdout.contains("\"service\": \"tokenet.tsp.v1.Provisioning\""), "\(plain.stdout)")
    }

    @Test func theClientSideShowsEachFrameWithItsRequestDecoded() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("client.bin")
        try Data(try Self.clientSide()).write(to: URL(fileURLWithPath: file))
        let result = try await runTokenet(["decode", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"protocolVersion\": 1"), "\(result.stdout)")
        #expect(result.stdout.contains("\"method\": \"/tokenet.health.v1.Health/Check\""), "\(result.stdout)")
        #expect(result.stdout.contains("\"text\": \"abc123def456789\""), "\(result.stdout)")
        let request = """
            {
              "streamId": 1,
              "message": {
                "request": "tokenet.health.v1.HealthCheckRequest",
                "value": {
                  "service": "tokenet.tsp.v1.Provisioning"
                }
              }
            }
            """
        #expect(result.stdout.contains(request), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("{\n  \"streamId\": 1,\n  \"halfClose\": {}\n}\n"), "\(result.stdout)")
    }

    @Test func theServerSideIsDecodedWithTheClientsCalls() async throws {
        let directory = try TemporaryDirectory()
        let client = directory.path("client.hex")
        let server = directory.path("server.hex")
        try Self.hex(try Self.clientSide()).write(toFile: client, atomically: true, encoding: .utf8)
        try Self.hex(try Self.serverSide()).write(toFile: server, atomically: true, encoding: .utf8)
        let result = try await runTokenet(["decode", "--hex", "--calls", client, server])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"response\": \"tokenet.health.v1.HealthCheckResponse\""), "\(result.stdout)")
        #expect(result.stdout.contains("\"status\": \"SERVING_STATUS_SERVING\""), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("{\n  \"streamId\": 1,\n  \"status\": {}\n}\n"), "\(result.stdout)")

        // Without the client's side the messages keep their bytes, unless --method names the call.
        let alone = try await runTokenet(["decode", "--hex", server])
        #expect(alone.status == 0, "\(alone.stderr)")
        #expect(alone.stdout.contains("\"withheldBytes\": 2"), "\(alone.stdout)")
        // With a note that says why, and how to have them decoded.
        #expect(
            alone.stderr
                == "decode: note: the messages of calls whose call_start is not in the input (stream 1 first) are "
                + "shown by their length alone (their bytes withheld: a field of a type not known may hold a "
                + "security code); give the client's side of the connection with --calls, or the method with "
                + "--method\n", "\(alone.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let named = try await runTokenet(["decode", "--hex", "--method", Self.check, server])
        #expect(named.stdout.contains("\"status\": \"SERVING_STATUS_SERVING\""), "\(named.stdout)")
        #expect(named.stderr.isEmpty, "\(named.stderr)")
        // As tokenet call takes a method: without the leading slash, or with a dot before the method's name.
        for written in ["tokenet.health.v1.Health/Check", "tokenet.health.v1.Health.Check"] {
            let asCalled = try await runTokenet(["decode", "--hex", "--method", written, server])
            #expect(asCalled.status == 0, "\(written): \(asCalled.stderr)")
            #expect(asCalled.stdout == named.stdout, "\(written)")
        }
    }

    /// A peer that announced a max_frame_size above the 4 MiB default may be sent frames that long: decode refused
    /// them ("exceeds the maximum frame size of 4194304 bytes").
    @Test func aFrameAboveTheDefaultLimitIsDecoded() async throws {
        var hello = WireV1.Hello()
        hello.protocolVersion = 1
        var settings = WireV1.Settings()
        settings.maxFrameSize = 8 << 20
        hello.settings = settings
        let large = WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: Data(count: 5 << 20))))
        let bytes =
            try FrameEncoder().encode(WireV1.Frame(streamID: 0, kind: .hello(hello)))
            + FrameEncoder(maximumFrameSize: 8 << 20).encode(large)
        let directory = try TemporaryDirectory()
        try Data(bytes).write(to: URL(fileURLWithPath: directory.path("server.bin")))
        let result = try await runTokenet(["decode", directory.path("server.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"maxFrameSize\": 8388608"), "\(String(result.stdout.prefix(300)))")
        #expect(result.stdout.contains("\"streamId\": 1,\n  \"message\": {"), "\(String(result.stdout.prefix(300)))")
    }

    @Test func oneMessageOfANamedType() async throws {
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckResponse", "--base64"], stdin: "CAE=\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"status\": \"SERVING_STATUS_SERVING\"\n}\n")
        let hex = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckResponse", "--hex"], stdin: "08:01")
        #expect(hex.stdout == result.stdout)
        // The same flag twice is what it says once.
        let twice = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckResponse", "--hex", "--hex"], stdin: "0801")
        #expect(twice.status == 0 && twice.stdout == result.stdout, "\(twice.stderr)")
        // A full name as protobuf writes it, with a leading dot.
        let dotted = try await runTokenet(
            ["decode", "--type", ".tokenet.health.v1.HealthCheckResponse", "--hex"], stdin: "0801")
        #expect(dotted.status == 0 && dotted.stdout == result.stdout, "\(dotted.stderr)")
    }

    /// Legal encodings that are written back shorter (a default value written out, a field sent twice, -0.0, a
    /// varint longer than it needs) hold no field the type lacks, and get no note saying so; a field the type does
    /// not have does.
    @Test(arguments: [
        ("tokenet.health.v1.HealthCheckRequest", "0a00", false),
        ("tokenet.health.v1.HealthCheckResponse", "08010801", false),
        ("tokenet.testing.v1.Scalars", "090000000000000080", false),
        ("tokenet.testing.v1.Scalars", "188100", false),
        ("tokenet.health.v1.HealthCheckResponse", "0801f80701", true),
    ])
    func onlyFieldsTheTypeLacksGetANote(type: String, hex: String, noted: Bool) async throws {
        let result = try await runTokenet(["decode", "--type", type, "--hex"], stdin: hex)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("does not have") == noted, "\(result.stderr)")
    }

    /// A double whose digits read as a card number is masked like any field, though JSON writes it as a number.
    @Test func aDoubleThatReadsAsACardNumberIsMasked() async throws {
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.testing.v1.Scalars", "--hex"], stdin: "0989265fb21aea3043")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"************0009\""), "\(result.stdout)")
        #expect(!result.stdout.contains("4761000010000009"), "\(result.stdout)")
    }

    /// Bytes that happen to be hex digits are taken as the message when it has every field they hold: a service
    /// name of 48 hex digits is a HealthCheckRequest whose tag (a line feed) and length ('0', 48) read as text too.
    @Test func aMessageWhoseBytesAreHexDigitsIsDecoded() async throws {
        let name = String(repeating: "0123456789abcdef", count: 3)
        let result = try await runTokenet(
            ["decode", "--type", "tokenet.health.v1.HealthCheckRequest"], stdin: "\n0" + name)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "{\n  \"service\": \"\(name)\"\n}\n")
    }

    @Test func aStreamThatStopsInsideAFrameShowsWhatCameBefore() async throws {
        let bytes = try Self.clientSide()
        let result = try await runTokenet(["decode", "--hex"], stdin: Self.hex(Array(bytes.dropLast(3))))
        #expect(result.status == 1)
        #expect(result.stdout.contains("\"method\": \"/tokenet.health.v1.Health/Check\""), "\(result.stdout)")
        #expect(result.stderr.contains("decode: frame 4 (after 3 whole frames) cannot be decoded"), "\(result.stderr)")
    }

    /// A file that is not a regular one (`/dev/stdin` on a pipe, a FIFO, a shell's `<(…)`) is read as a stream:
    /// reading it whole at once was refused with "Permission denied".
    @Test func aPipeGivenByNameIsReadAsAStream() async throws {
        let bytes = Data(try Self.clientSide())
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(bytes)
        try pipe.fileHandleForWriting.close()
        let input = pipe.fileHandleForReading
        let fromStdin = try await offThePool { try runTokenet(["decode", "/dev/stdin"], standardInput: input) }
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        #expect(fromStdin.stdout.contains("\"method\": \"/tokenet.health.v1.Health/Check\""), "\(fromStdin.stdout)")

        let directory = try TemporaryDirectory()
        let fifo = directory.path("client.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        // The writer waits for its reader, the command, but not forever: a command that never opens the FIFO must
        // fail the test, not leave a thread blocked in open(2).
        let writer = Thread {
            let limit = Date().addingTimeInterval(30)
            var descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
            while descriptor < 0 && errno == ENXIO && Date() < limit {
                usleep(10_000)
                descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
            }
            guard descriptor >= 0 else { return }
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
        writer.start()
        let fromFIFO = try await runTokenet(["decode", fifo])
        #expect(fromFIFO.status == 0, "\(fromFIFO.stderr)")
        #expect(fromFIFO.stdout.contains("\"text\": \"abc123def456789\""), "\(fromFIFO.stdout)")
    }

    @Test func aFileThatCannotBeReadIsNamedWithTheReason() async throws {
        let directory = try TemporaryDirectory()
        let missing = try await runTokenet(["decode", directory.path("nothing.bin")])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("decode: cannot read \(directory.path("nothing.bin")): No such file"))
        let folder = try await runTokenet(["decode", directory.url.path])
        #expect(folder.status == 2)
        #expect(folder.stderr.contains("Is a directory"), "\(folder.stderr)")
    }

    @Test(arguments: [
        (["--hex"], "zz", 2, "decode: --hex: 'z' at offset 0 is not a hex digit"),
        // Control characters are named by value, not written to the terminal (an escape sequence would act on it).
        (["--hex"], "08\u{1B}[2J", 2, "decode: --hex: byte 27 at offset 2 is not a hex digit"),
        (["--hex"], "\u{0}", 2, "decode: --hex: byte 0 at offset 0 is not a hex digit"),
        (["--hex"], "0\u{7F}", 2, "decode: --hex: byte 127 at offset 1 is not a hex digit"),
        (["--hex"], "0801f", 2, "decode: --hex: the input ends in half a byte"),
        // tshark -z follow,tls,raw,N as it prints: a header, then both sides, one of them indented with a tab.
        (
            ["--hex"],
            "\n===================================================================\nFollow: tls,raw\n"
                + "Filter: tcp.stream eq 5\nNode 0: 127.0.0.1:26349\nNode 1: :0\n\t0000000412020801\n00000000\n",
            2, "decode: --hex: this is tshark's follow output, which holds both sides of the connection"
        ),
        (["--base64"], "*not*", 2, "decode: --base64: '*' at offset 0 is not a base64 character"),
        (["--base64"], "CAE=\n\u{1B}[2J", 2, "decode: --base64: byte 27 at offset 5 is not a base64 character"),
        // Padding inside the text, or more of it than base64 has, once decoded as if each "=" were not there.
        (
            ["--base64", "--type", "tokenet.health.v1.HealthCheckResponse"], "CA=E", 2,
            "decode: --base64: '=' at offset 2 is padding, which only ends the text"
        ),
        (
            ["--base64", "--type", "tokenet.health.v1.HealthCheckResponse"], "CAE=====\n", 2,
            "decode: --base64: 8 characters (5 of them '=') are not base64"
        ),
        (["--base64"], "CAEAC\n", 2, "decode: --base64: 5 characters (none of them '=') are not base64"),
        (["--base64"], "C\n", 2, "decode: --base64: 1 character (none of them '=') is not base64"),
        (["--type", "no.such.Message"], "", 2, "decode: --type: this build has no message 'no.such.Message'"),
        (["--method", "/no.Such/Method"], "", 2, "decode: --method: this build has no method '/no.Such/Method'"),
        // A close name is named as the one meant, as tokenet call and describe name it.
        (
            ["--type", "HealthCheckResponse"], "", 2,
            "decode: --type: this build has no message 'HealthCheckResponse'; did you mean "
                + "tokenet.health.v1.HealthCheckResponse?\n"
        ),
        (
            ["--type", "tokenet.testing.v1.Scalar"], "", 2,
            "this build has no message 'tokenet.testing.v1.Scalar'; did you mean tokenet.testing.v1.Scalars?\n"
        ),
        (
            ["--method", "Health/Chek"], "", 2,
            "decode: --method: this build has no method 'Health/Chek' (/package.Service/Method); did you mean "
                + "tokenet.health.v1.Health/Check?\n"
        ),
        (["--calls", "client.hex"], "", 2, "decode: --calls CLIENT needs the server's side as FILE"),
        (
            ["--calls", "client.hex", "--method", "/tokenet.health.v1.Health/Check", "server.hex"], "", 2,
            "decode: give --calls or --method, not both"
        ),
        // A stream id wider than 32 bits: protobuf-c kept its low bits, and the frame showed as stream 0's.
        (["--hex"], "00000009 08808080808020 2a00", 1, "its stream id 1099511627776 is above 2^32 - 1"),
        (["--hex", "--base64"], "", 2, "decode: give --hex or --base64, not both"),
        (["--frames"], "", 2, "decode: unknown option '--frames'"),
        (["--hex"], "", 1, "decode: the input holds no frame"),
        (
            ["--hex"], "00000000 00000000 00000000", 1,
            "decode: the input holds 3 frames and all are empty (a length of 0): bytes of zeros"
        ),
        // Encoded text without its flag: its first characters read as a length prefix of hundreds of megabytes,
        // reported as a peer that "does not speak Tokenet".
        ([], "0000000412020801\n", 2, "decode: standard input holds hex text, not bytes: add --hex"),
        ([], "AAAABBICCAE=\n", 2, "decode: standard input holds base64 text, not bytes: add --base64"),
        (
            ["--type", "tokenet.health.v1.HealthCheckResponse"], "08:01:ff\n", 2,
            "decode: standard input holds hex text, not bytes: add --hex"
        ),
        // Text that reads as a message of fields the type does not have printed {} with status 0.
        (
            ["--type", "tokenet.health.v1.HealthCheckResponse"], "0801", 2,
            "decode: standard input holds hex text, not bytes: add --hex"
        ),
        ([], "{\"status\": 1}\n", 1, "decode: standard input holds text, not Tokenet frames"),
        // Words are in the base64 alphabet; the advice to add --base64 then failed on the text's length.
        ([], "hello world\n", 1, "decode: standard input holds text, not Tokenet frames"),
        (
            ["--hex", "--type", "tokenet.health.v1.HealthCheckResponse"], "ff", 1,
            "tokenet: decode: the bytes are not a valid tokenet.health.v1.HealthCheckResponse message: at byte 0, a "
                + "field's key runs past the end of its message\n"
        ),
        // A length prefix of 4 GiB: refused before anything is allocated for it.
        (["--hex"], "ffffffff00", 1, "decode: frame 1 (after 0 whole frames) cannot be decoded"),
    ])
    func badInputIsNamed(arguments: [String], stdin: String, status: Int32, message: String) async throws {
        let result = try await runTokenet(["decode"] + arguments, stdin: stdin)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("invalidMessage"), "\(result.stderr)")
        #expect(!result.stderr.contains("peer"), "\(result.stderr)")
    }

    /// Input of zeros alone is named before anything is printed, however long (60 MB printed 15 million lines of
    /// {} first).
    @Test func zerosAreNamedBeforeAnythingIsPrinted() async throws {
        let result = try await runTokenet(
            ["decode", "--hex"], stdin: String(repeating: "00000000", count: 100_000) + "\n")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout.prefix(200))")
        #expect(result.stderr.contains("decode: the input holds 100000 frames and all are empty"), "\(result.stderr)")
    }
}
