import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

/// `tokenet-diagram` on captures that are not whole, not decryptable or not what the command asks for: each says
/// what is wrong and what to do, and a diagram drawn from part of a capture does not pass for the whole of it.
@Suite struct DiagramCaptureTests {
    /// A capture of two Health/Check calls on one plaintext connection, with trace ids `first` and `second`.
    static func twoCalls(first: String = "0000000000000f1", second: String = "0000000000000f2") throws
        -> PlaintextCapture
    {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40010)
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        capture.send(hello, on: &connection, fromClient: true)
        capture.send(hello, on: &connection, fromClient: false)
        for (stream, trace) in [(UInt32(1), first), (3, second)] {
            let call = try DissectorCaptureTests.checkCall(stream: stream, trace: trace)
            capture.send(call.client, on: &connection, fromClient: true)
            capture.send(call.server, on: &connection, fromClient: false)
        }
        return capture
    }

    /// A TLS ClientHello (TLS 1.3, one cipher suite, no extensions) from `clientPort` to port 443: a connection the
    /// capture shows as TLS, whose frames no key log in the test can decrypt.
    static func addTLSConnection(to capture: inout PlaintextCapture, clientPort: UInt16) {
        var connection = capture.connect(clientPort: clientPort, serverPort: 443)
        let body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0x5A, count: 32) + [0, 0, 2, 0x13, 0x01, 1, 0, 0, 0]
        let handshake: [UInt8] = [1, 0, 0, UInt8(body.count)] + body
        let record: [UInt8] = [0x16, 0x03, 0x01, 0, UInt8(handshake.count)] + handshake
        capture.send(record, on: &connection, fromClient: true)
    }

    /// A status message with control and invisible characters (a BEL, a C1 control, a line separator, a
    /// right-to-left override) shows escaped in one form in the summary, the tree and the diagram: the diagram
    /// passed the C1 control, the separator and the override through as they were, and wrote the BEL as "\x7".
    @Test func controlAndInvisibleCharactersShowEscapedEverywhere() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40025)
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        capture.send(hello, on: &connection, fromClient: true)
        capture.send(hello, on: &connection, fromClient: false)
        let call = try DissectorCaptureTests.checkCall(stream: 1, trace: "0000000000000f6")
        capture.send(call.client, on: &connection, fromClient: true)
        var status = WireV1.Status()
        status.code = .internal
        status.message = "bell\u{7} nel\u{85} ls\u{2028} rlo\u{202E} end"
        capture.send(
            try PlaintextCapture.bytes([WireV1.Frame(streamID: 1, kind: .status(status))]), on: &connection,
            fromClient: false)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let shown = "bell\\x07 nel\\u{85} ls\\u{2028} rlo\\u{202E} end"
        let summary = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap")])
        let tree = try await DissectorCaptureTests.shark(["-r", directory.path("capture.pcap"), "-V", "-O", "tokenet"])
        let diagram = try await DissectorCaptureTests.diagram(["--format", "text", directory.path("capture.pcap")])
        for (name, result) in [("summary", summary), ("tree", tree), ("diagram", diagram)] {
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(result.stdout.contains(shown), "\(name):\n\(result.stdout)")
            for raw in ["\u{7}", "\u{85}", "\u{2028}", "\u{202E}"] {
                #expect(!result.stdout.contains(raw), "\(name) shows \(raw.unicodeScalars.first!.value) raw")
            }
        }
    }

    /// A capture started after a TLS connection was opened shows neither its SYN nor its ClientHello: its records
    /// cannot be decrypted, and the calls on it were left out of the diagram without a word (the nodes' connections
    /// to each other stay open, so a capture started after the nodes drew none of their calls to each other).
    @Test func tlsBegunBeforeTheCaptureIsCounted() async throws {
        var capture = try Self.twoCalls()
        var connection = capture.connect(clientPort: 40022, serverPort: 443, handshake: false)
        let record: [UInt8] = [0x17, 0x03, 0x03, 0, 32] + [UInt8](repeating: 0xA5, count: 32)
        capture.send(record, on: &connection, fromClient: true)
        capture.send(record, on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let keylog = directory.path("keys.log")
        try Data("# no secrets\n".utf8).write(to: URL(fileURLWithPath: keylog))
        let result = try await DissectorCaptureTests.diagram(["--keylog", keylog, "--format", "text", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("trace 0000000000000f2"), "\(result.stdout)")
        #expect(
            result.stderr
                == "tokenet-diagram: warning, calls may be missing: 1 TLS connection began before the capture did, "
                + "so it cannot be decrypted; start the capture before the nodes, which keep their connections to "
                + "each other open\n")
    }

    /// A plaintext capture started after its connection was made holds no hello, by which the dissector finds a
    /// connection: the diagram found no call and had no way to name the port, as tokenet-shark's -o does.
    @Test func aPlaintextPortIsDecodedWithoutItsHello() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40024, handshake: false)
        let call = try DissectorCaptureTests.checkCall(stream: 5, trace: "0000000000000f5")
        capture.send(call.client, on: &connection, fromClient: true)
        capture.send(call.server, on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let found = try await DissectorCaptureTests.diagram(["--format", "text", path])
        #expect(found.status == 1)
        // Nothing found at all: where a capture usually goes wrong (another interface), and this port's way out.
        #expect(
            found.stderr
                == "tokenet-diagram: no Tokenet call in \(path): it holds no TLS or Tokenet traffic that could be "
                + "found; nodes on 127.0.0.1 talk over the loopback interface (dumpcap -i lo), and a plaintext-mode "
                + "connection whose hello is not in the capture is decoded with --plaintext-port PORT\n")
        let named = try await DissectorCaptureTests.diagram(["--format", "text", "--plaintext-port", "7001", path])
        #expect(named.status == 0, "\(named.stderr)")
        let request = "127.0.0.1:40024 -> 127.0.0.1:7001   tokenet.health.v1.Health/Check  trace 0000000000000f5"
        #expect(named.stdout.contains(request), "\(named.stdout)")
        #expect(named.stdout.contains("127.0.0.1:40024 <- 127.0.0.1:7001   OK"), "\(named.stdout)")
        let bad = try await DissectorCaptureTests.diagram(["--plaintext-port", "70001", path])
        #expect(bad.status == 2)
        #expect(
            bad.stderr.contains("--plaintext-port: expected a TCP port from 1 to 65535, got '70001'"), "\(bad.stderr)")
    }

    /// A call whose status is not in the capture (its node killed, the capture stopped first) was drawn with its
    /// request and nothing after, as if still running or its answer left out: it ends with a note saying so.
    @Test func aCallWithoutItsStatusIsNoted() async throws {
        var capture = try Self.twoCalls()
        var connection = capture.connect(clientPort: 40023)
        let call = try DissectorCaptureTests.checkCall(stream: 1, trace: "0000000000000f3")
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        capture.send(hello + call.client, on: &connection, fromClient: true)
        // The server's hello and its response, but no status.
        var response = HealthV1.HealthCheckResponse()
        response.status = .serving
        let message = WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: try response.serializedData())))
        capture.send(hello + (try PlaintextCapture.bytes([message])), on: &connection, fromClient: false)
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try capture.write(to: path)
        let text = try await DissectorCaptureTests.diagram(["--format", "text", "--trace", "0000000000000f3", path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.stdout.hasSuffix("127.0.0.1:40023 .. 127.0.0.1:7001   no status in the capture (1 message)\n"),
            "\(text.stdout)")
        let mermaid = try await DissectorCaptureTests.diagram(["--trace", "0000000000000f3", path])
        let note = "    Note over P1,P2: no status in the capture (1 message)\n"
        #expect(mermaid.stdout.hasSuffix(note), "\(mermaid.stdout)")
    }

    /// A capture cut short in its last packet (dumpcap killed, or the file read while still written) gave no
    /// diagram at all, only tshark's complaint: the calls before the cut are drawn, and the exit status says the
    /// capture is not whole.
    @Test func aCaptureCutShortDrawsTheCallsBeforeTheCut() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try Self.twoCalls().write(to: path)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count - 10).write(to: URL(fileURLWithPath: path))
        let result = try await DissectorCaptureTests.diagram(["--format", "text", path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("tokenet.health.v1.Health/Check  trace 0000000000000f1"), "\(result.stdout)")
        #expect(result.stdout.contains("OK  (1.0 ms)"), "\(result.stdout)")
        #expect(result.stdout.contains("trace 0000000000000f2"), "\(result.stdout)")
        #expect(
            result.stderr.contains("tokenet-diagram: the capture ends early, so the diagram stops there"),
            "\(result.stderr)")
        #expect(result.stderr.contains("cut short in the middle of a packet"), "\(result.stderr)")
        #expect(!result.stderr.contains("Running as user"), "\(result.stderr)")
        // With an empty key log, tokenet-shark's note on it stays out of the line on the cut.
        let keylog = directory.path("keys.log")
        try Data().write(to: URL(fileURLWithPath: keylog))
        let empty = try await DissectorCaptureTests.diagram(["--format", "text", "--keylog", keylog, path])
        #expect(empty.status == 1, "\(empty.stderr)")
        let cut = empty.stderr.split(separator: "\n").filter { $0.contains("ends early") }
        #expect(cut.count == 1, "\(empty.stderr)")
        #expect(cut.first?.hasSuffix("appears to have been cut short in the middle of a packet.") == true, "\(cut)")
    }

    /// A trace id that no call carries was reported as if the capture held no call at all, with advice about the
    /// key log that did not apply.
    @Test func aTraceIdThatNoCallCarriesIsToldApartFromAnEmptyCapture() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try Self.twoCalls().write(to: path)
        let result = try await DissectorCaptureTests.diagram(["--trace", "123456789abcdef", path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(
            result.stderr
                == "tokenet-diagram: none of the 2 calls in \(path) has trace id 123456789abcdef (they carry 2 trace "
                + "ids; without --trace, --format text lists each call with its own)\n")
    }

    /// `--help` printed argparse's list of options (`--trace TRACE`) without a word on what they do or what the exit
    /// statuses mean, which the script's own text says.
    @Test func helpSaysWhatEachOptionDoes() async throws {
        let result = try await DissectorCaptureTests.diagram(["--help"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Draws the calls in a capture of Tokenet traffic"), "\(result.stdout)")
        #expect(result.stdout.contains("--trace ID       only the calls of one flow"), "\(result.stdout)")
        #expect(result.stdout.contains("2 on bad usage"), "\(result.stdout)")
    }

    /// A name given with --name went into the Mermaid text as typed: a ";" ended the participant's line there and
    /// a "#" began an entity, so the diagram did not draw.
    @Test func aGivenNameKeepsTheMermaidTextWhole() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        try Self.twoCalls().write(to: path)
        let result = try await DissectorCaptureTests.diagram(["--name", "127.0.0.1:7001=tsp; node #1", path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("    participant P2 as tsp, node no.1\n"), "\(result.stdout)")
    }

    /// An empty file (a capture nothing was written to) read as a capture without calls, and a directory as a
    /// missing file.
    @Test func aFileThatIsNoCaptureIsNamedForWhatItIs() async throws {
        let directory = try TemporaryDirectory()
        let empty = directory.path("empty.pcap")
        try Data().write(to: URL(fileURLWithPath: empty))
        let result = try await DissectorCaptureTests.diagram([empty])
        #expect(result.status == 1)
        #expect(
            result.stderr == "tokenet-diagram: the capture \(empty) is empty (0 bytes): nothing was written to it\n")
        let folder = try await DissectorCaptureTests.diagram([directory.url.path])
        #expect(folder.status == 1)
        #expect(folder.stderr.contains("\(directory.url.path) is not a file"), "\(folder.stderr)")
    }

    /// TLS connections that show no Tokenet frame: with no calls at all the key log was blamed only when none was
    /// given, and a key log that was empty or another run's went unmentioned; and when some connections were read,
    /// the diagram of those passed for the whole capture.
    @Test func tlsThatCannotBeReadIsCounted() async throws {
        let directory = try TemporaryDirectory()
        let tlsOnly = directory.path("tls.pcap")
        var capture = PlaintextCapture()
        Self.addTLSConnection(to: &capture, clientPort: 40020)
        try capture.write(to: tlsOnly)
        let keylog = directory.path("keys.log")
        try Data().write(to: URL(fileURLWithPath: keylog))

        let without = try await DissectorCaptureTests.diagram([tlsOnly])
        #expect(without.status == 1)
        #expect(
            without.stderr
                == "tokenet-diagram: no Tokenet call in \(tlsOnly): 1 TLS connection cannot be read without --keylog "
                + "and the secrets the nodes wrote to SSLKEYLOGFILE\n")
        let empty = try await DissectorCaptureTests.diagram(["--keylog", keylog, tlsOnly])
        #expect(empty.status == 1)
        #expect(
            empty.stderr.hasPrefix(
                "tokenet-diagram: no Tokenet call in \(tlsOnly): 1 TLS connection shows no Tokenet frame, since "
                    + "\(keylog) holds no secrets for it"),
            "\(empty.stderr)")

        let mixed = directory.path("mixed.pcap")
        capture = try Self.twoCalls()
        Self.addTLSConnection(to: &capture, clientPort: 40021)
        try capture.write(to: mixed)
        let partial = try await DissectorCaptureTests.diagram(["--keylog", keylog, mixed])
        #expect(partial.status == 0, "\(partial.stderr)")
        #expect(partial.stdout.contains("tokenet.health.v1.Health/Check"), "\(partial.stdout)")
        #expect(
            partial.stderr.hasPrefix("tokenet-diagram: warning, calls may be missing: 1 TLS connection shows no"),
            "\(partial.stderr)")

        let missing = try await DissectorCaptureTests.diagram(["--keylog", directory.path("nothing.log"), mixed])
        #expect(missing.status == 2)
        #expect(missing.stderr == "tokenet-diagram: --keylog: no key log file \(directory.path("nothing.log"))\n")
    }
}

extension DiagramCaptureTests {
    /// The number of responses showed on every failed unary call ("NOT_FOUND: … (0 messages)"), read "(1 messages)",
    /// and was left off a cancelled stream however many it had carried.
    @Test func responsesAreCountedWhereTheySaySomething() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40030)
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        capture.send(hello, on: &connection, fromClient: true)
        capture.send(hello, on: &connection, fromClient: false)
        func start(_ stream: UInt32, _ method: String) throws -> [UInt8] {
            try PlaintextCapture.bytes([
                WireV1.Frame(streamID: stream, kind: .callStart(WireV1.CallStart(method: method, metadata: []))),
                WireV1.Frame(streamID: stream, kind: .message(WireV1.Message(data: Data()))),
                WireV1.Frame(streamID: stream, kind: .halfClose(WireV1.HalfClose())),
            ])
        }
        func responses(_ stream: UInt32, _ count: Int) throws -> [UInt8] {
            let message = WireV1.Message(data: Data([8, 1]))
            let frames = (0..<count).map { _ in WireV1.Frame(streamID: stream, kind: .message(message)) }
            return try PlaintextCapture.bytes(frames)
        }
        var failed = WireV1.Status()
        failed.code = .notFound
        failed.message = "no such card"
        var cutOff = WireV1.Status()
        cutOff.code = .deadlineExceeded
        var cancel = WireV1.Cancel()
        cancel.reason = "cancelled by the caller"
        // A unary call that fails; a Watch cut off by its deadline after one message; a Watch cancelled after three.
        capture.send(try start(1, "/tokenet.tsp.v1.TspControl/GetToken"), on: &connection, fromClient: true)
        capture.send(
            try PlaintextCapture.bytes([WireV1.Frame(streamID: 1, kind: .status(failed))]), on: &connection,
            fromClient: false)
        capture.send(try start(3, "/tokenet.health.v1.Health/Watch"), on: &connection, fromClient: true)
        capture.send(
            try responses(3, 1) + PlaintextCapture.bytes([WireV1.Frame(streamID: 3, kind: .status(cutOff))]),
            on: &connection, fromClient: false)
        capture.send(try start(5, "/tokenet.health.v1.Health/Watch"), on: &connection, fromClient: true)
        capture.send(try responses(5, 3), on: &connection, fromClient: false)
        capture.send(
            try PlaintextCapture.bytes([WireV1.Frame(streamID: 5, kind: .cancel(cancel))]), on: &connection,
            fromClient: true)
        let directory = try TemporaryDirectory()
        try capture.write(to: directory.path("capture.pcap"))
        let result = try await DissectorCaptureTests.diagram([directory.path("capture.pcap")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("P2--xP1: NOT_FOUND: no such card\n"), "\(result.stdout)")
        #expect(result.stdout.contains("P2--xP1: DEADLINE_EXCEEDED (1 message)\n"), "\(result.stdout)")
        #expect(
            result.stdout.hasSuffix("P1-xP2: cancelled: cancelled by the caller (3 messages)\n"), "\(result.stdout)")
    }
}

extension DiagramCaptureTests {
    /// Read through `| head`, the diagram ended in a Python traceback (BrokenPipeError) once its reader had gone.
    @Test func aReaderThatStopsEarlyEndsTheDiagramQuietly() async throws {
        var capture = PlaintextCapture()
        var connection = capture.connect(clientPort: 40040)
        let hello = try PlaintextCapture.bytes([DissectorCaptureTests.hello()])
        capture.send(hello, on: &connection, fromClient: true)
        capture.send(hello, on: &connection, fromClient: false)
        // More lines of text than a pipe holds (64 KiB), so that the writer meets the closed pipe.
        for stream in stride(from: UInt32(1), to: 1600, by: 2) {
            let call = try DissectorCaptureTests.checkCall(stream: stream, trace: "00000000000\(stream + 10000)")
            capture.send(call.client, on: &connection, fromClient: true)
            capture.send(call.server, on: &connection, fromClient: false)
        }
        let directory = try TemporaryDirectory()
        let path = directory.path("capture.pcap")
        let stderr = directory.path("stderr")
        try capture.write(to: path)
        let result = try await offThePool { () throws -> (status: Int32, stderr: String) in
            let process = try SpawnedProcess(
                "/usr/bin/python3", [PackageRoot.path("Tools/dissector/tokenet-diagram"), "--format", "text", path],
                standardOutput: .pipe, standardError: .file(stderr))
            // The reader goes away before reading anything, as `| head -0` would.
            try process.standardOutput?.close()
            let termination = process.waitUntilExit(killingAfter: 120)
            return (termination.status, try String(contentsOfFile: stderr, encoding: .utf8))
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("Traceback"), "\(result.stderr)")
    }
}
