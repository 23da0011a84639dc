import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// Runs the real node executables and checks their process-level contract: readiness, signals, exit statuses.
@Suite struct NodeProcessTests {
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func nodeStopsGracefullyOnSignal(signal: Int32) async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            "tsp-node",
            ["--plaintext", "--data-dir", scratch.path("data"), "--ready-file", readyFile, "--log-format", "json"])
        defer { node.process.send(SIGTERM) }

        let ready = try #require(try await waitForReadyFile(readyFile, of: node.process))
        #expect(ready.node == "tsp-node")
        #expect(ready.pid == node.process.pid)

        node.process.send(signal)
        let result = try await node.waitForExit()
        #expect(result.reason == .exit)
        #expect(result.status == 0)
        #expect(result.stdout == ready.line + "\n")
        #expect(result.stderr.contains(#""msg":"stopping","signal":"\#(StopSignalWatcher.name(of: signal))""#))
        #expect(result.stderr.contains(#""msg":"stopped""#))
        // JSON logs carry the plaintext warning as a line of their own; the text banner is for text logs.
        #expect(result.stderr.contains(#""msg":"TLS is disabled by --plaintext; use only for local debugging""#))
        #expect(!FileManager.default.fileExists(atPath: readyFile))
    }

    /// A node whose log reader has gone (`tsp-node --plaintext … 2>&1 | head -1`) keeps running: the first line of
    /// its --plaintext banner used to kill it with SIGPIPE before it had started.
    @Test func aNodeWhoseLogReaderHasGoneKeepsRunning() async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        let node = try SpawnedProcess(
            try BuiltExecutables.url(of: "tsp-node").path,
            ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", scratch.path("data"), "--ready-file", readyFile],
            standardInput: .nullDevice, standardOutput: .nullDevice,
            standardError: .descriptor(pipe.fileHandleForWriting.fileDescriptor))
        try pipe.fileHandleForWriting.close()
        defer { node.send(SIGTERM) }
        #expect(try await waitForReadyFile(readyFile, of: node) != nil)
        node.send(SIGTERM)
        let termination = try await offThePool { node.waitUntilExit(killingAfter: 60) }
        #expect(termination == .init(reason: .exit, status: 0))
    }

    @Test func plaintextNodeAnswersHealthOverPlainTCPAndExitsOnSIGTERM() async throws {
        let scratch = try TemporaryDirectory()
        let (node, readyFile, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGTERM) }

        let loop = try EventLoop(name: "test-node-health")
        defer { loop.shutdown() }
        let connection = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
        let client = RPCClient(stream: connection)
        let response = try await client.unary(
            HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(30)))
        #expect(response.status == .serving)
        await client.close()

        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.reason == .exit)
        #expect(result.status == 0)
        #expect(result.stderr.contains("--plaintext is set. TLS is OFF"))
        #expect(!FileManager.default.fileExists(atPath: readyFile))
    }

    /// A plaintext issuer does not register with its plaintext TSP, which takes a registration only from an issuer's
    /// certificate: it says so once at start. It tried every 10 s, and logged each refusal as an error to fix.
    @Test func aPlaintextIssuerSaysItWillNotRegister() async throws {
        let scratch = try TemporaryDirectory()
        let (tsp, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { tsp.process.send(SIGTERM) }
        let readyFile = scratch.path("issuer-ready.json")
        let issuer = try LaunchedProcess(
            "issuer-node",
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--data-dir", scratch.path("issuer"), "--tsp",
                address.description, "--fixtures", PackageRoot.path("Tools/fixtures/issuer.json"), "--ready-file",
                readyFile, "--parent-pid", "\(getpid())",
            ])
        defer { issuer.process.send(SIGTERM) }
        let deadline = Date().addingTimeInterval(180)
        while !FileManager.default.fileExists(atPath: readyFile), issuer.process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        // A registration was tried as soon as the node had started.
        try await Task.sleep(for: .seconds(2))
        issuer.process.send(SIGTERM)
        let issued = try await issuer.waitForExit()
        tsp.process.send(SIGTERM)
        let served = try await tsp.waitForExit()
        #expect(issued.status == 0, "\(issued.stderr)")
        #expect(
            issued.stderr.contains(
                "--plaintext: not registering with the TSP, nor subscribing to its notifications (both need the "
                    + "issuer's certificate)"), "\(issued.stderr)")
        #expect(!issued.stderr.contains("registration"), "\(issued.stderr)")
        #expect(!served.stderr.contains("RegisterIssuer"), "\(served.stderr)")
    }

    /// With `--log-format json` every line on stderr is a JSON object, also with --plaintext, whose warning is then a
    /// log line rather than the text banner.
    @Test func jsonLogsHoldOnlyJSONLinesAlsoInPlaintext() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, _) = try await LaunchedProcess.plaintextTSPNode(in: scratch, ["--log-format", "json"])
        defer { node.process.send(SIGTERM) }
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.status == 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count >= 3, "\(result.stderr)")
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
        }
        #expect(result.stderr.contains(#""msg":"TLS is disabled by --plaintext; use only for local debugging""#))
        #expect(!result.stderr.contains("TLS is OFF"))
    }

    /// At `debug` a node writes one line per served call (method, peer, status, duration, trace id); at `info`, the
    /// default, none for calls that end OK. A call that fails gets its line at `info` at either level, with the
    /// message its caller got: a flow that failed left no reason in any log.
    @Test(arguments: ["debug", "info"])
    func servedCallsAreLoggedOneLineEachAtDebug(level: String) async throws {
        let result = try await Self.healthChecksLogged(
            level: level, traceID: "5eed0fca11ab1e5", succeeding: 3, failing: "no.such.Service")
        #expect(result.status == 0)
        let failed = result.stderr.split(separator: "\n").filter { $0.contains(#""msg":"call failed""#) }
        #expect(failed.count == 1, "\(result.stderr)")
        #expect(failed.first?.contains(#""level":"info""#) == true, "\(failed)")
        #expect(failed.first?.contains(#""status":"NOT_FOUND""#) == true, "\(failed)")
        #expect(failed.first?.contains(#""message":"this node does not serve no.such.Service""#) == true, "\(failed)")
        #expect(failed.first?.contains("5eed0fca11ab1e5") == true, "\(failed)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains(#""msg":"call""#) }
        if level == "info" {
            #expect(lines.isEmpty, "\(lines)")
        } else {
            #expect(lines.count == 3, "\(result.stderr)")
            for line in lines {
                #expect(line.contains(#""method":"/tokenet.health.v1.Health/Check""#), "\(line)")
                #expect(line.contains(#""peer":"plaintext""#), "\(line)")
                #expect(line.contains(#""status":"#), "\(line)")
                #expect(line.contains(#""duration_us":"#), "\(line)")
                #expect(line.contains("5eed0fca11ab1e5"), "\(line)")
            }
        }
    }

    /// A plaintext tsp-node logging JSON at `level`, asked `succeeding` health checks and then one of the service
    /// `failing` (which it does not serve), all with `traceID`; its output once it has stopped on SIGTERM.
    static func healthChecksLogged(level: String, traceID: String, succeeding: Int, failing: String) async throws
        -> ProcessResult
    {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(
            in: scratch, ["--log-format", "json", "--log-level", level])
        defer { node.process.send(SIGTERM) }
        let loop = try EventLoop(name: "test-node-call-log")
        defer { loop.shutdown() }
        let client = RPCClient(
            stream: try await PlainConnection.connect(host: address.host, port: address.port, on: loop))
        var metadata = Metadata()
        metadata.setTraceID(traceID)
        let options = CallOptions(timeout: .seconds(30), metadata: metadata)
        for _ in 0..<succeeding {
            _ = try await client.unary(HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: options)
        }
        await #expect(throws: RPCError.self) {
            try await client.unary(
                HealthV1.Health.check, HealthV1.HealthCheckRequest(service: failing), options: options)
        }
        await client.close()
        node.process.send(SIGTERM)
        return try await node.waitForExit()
    }

    /// At `trace` a node also writes each request and response of each served call as proto3 JSON, with the call's
    /// method, peer and trace id, and a card number in one masked as on every line. (It logged what `debug` does.)
    @Test func atTraceEachMessageIsLoggedAsJSONWithCardNumbersMasked() async throws {
        let result = try await Self.healthChecksLogged(
            level: "trace", traceID: "7ace0fca11ab1e5", succeeding: 1, failing: "pan 4111111111111111")
        #expect(result.status == 0)
        let lines = result.stderr.split(separator: "\n")
        let requests = lines.filter { $0.contains(#""msg":"request""#) }
        let responses = lines.filter { $0.contains(#""msg":"response""#) }
        #expect(requests.count == 2, "\(result.stderr)")
        #expect(responses.count == 1, "\(result.stderr)")
        for line in requests + responses {
            #expect(line.contains(#""level":"trace""#), "\(line)")
            #expect(line.contains(#""method":"/tokenet.health.v1.Health/Check""#), "\(line)")
            #expect(line.contains(#""peer":"plaintext""#), "\(line)")
            #expect(line.contains("7ace0fca11ab1e5"), "\(line)")
        }
        #expect(requests.first?.contains(#""body":"{}""#) == true, "\(requests)")
        #expect(responses.first?.contains(#""body":"{\"status\":\"SERVING_STATUS_SERVING\"}""#) == true, "\(responses)")
        #expect(requests.last?.contains(#"pan ************1111"#) == true, "\(requests)")
        #expect(!result.stderr.contains("4111111111111111"))
    }

    /// A node pings a peer it has not heard from and cuts it off when the ping goes unanswered (goaway
    /// KEEPALIVE_TIMEOUT, then close); a client that answers keeps its connection through the same pings. The
    /// timeout (20 s) leaves the answering client time to reply even when the test process is starved of CPU: with
    /// the whole suite starting at once on two CPUs, an 8 s timeout once cut the answering client off too.
    @Test(.timeLimit(.minutes(3))) func aSilentPeerIsPingedThenCutOff() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(
            in: scratch, ["--keepalive", "0.2", "--keepalive-timeout", "20"])
        defer { node.process.send(SIGTERM) }
        let loop = try EventLoop(name: "test-node-keepalive")
        defer { loop.shutdown() }
        let answering = RPCClient(
            stream: try await PlainConnection.connect(host: address.host, port: address.port, on: loop))
        // A failed check stops the node and shows its log, which says why it closed the connection.
        let check = { () async throws -> HealthV1.ServingStatus in
            do {
                return try await answering.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(30))
                ).status
            } catch {
                node.process.send(SIGTERM)
                let log = (try? await node.waitForExit())?.stderr ?? ""
                Issue.record("the answering client's check failed: \(error)\n\(log)")
                throw error
            }
        }
        #expect(try await check() == .serving)

        // The silent peer sends its hello, then only reads. The node hears from it first after `started`.
        let started = ContinuousClock.now
        let silent = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
        try await silent.write(bytes)
        // Without pings the node would never close it: a watchdog ends the wait instead of the time limit.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            await silent.close()
        }
        defer { watchdog.cancel() }
        var decoder = FrameDecoder()
        var kinds: [String] = []
        var goaway: WireV1.GoAway?
        var announced: UInt32?
        while let chunk = try? await silent.read() {
            decoder.feed(chunk)
            while let frame = try decoder.nextFrame() {
                switch frame.kind {
                case .hello(let hello):
                    kinds.append("hello")
                    announced = hello.settings?.keepaliveIntervalMs
                case .ping: kinds.append("ping")
                case .goaway(let value):
                    kinds.append("goaway")
                    goaway = value
                default: kinds.append("other")
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(kinds == ["hello", "ping", "goaway"], "\(kinds)")
        #expect(announced == 200, "the node's hello tells how often it pings")
        #expect(goaway?.code == .keepaliveTimeout)
        #expect(goaway?.reason.contains("no answer to keepalive ping") == true, "\(String(describing: goaway))")
        #expect(elapsed >= .milliseconds(20_200), "cut off after \(elapsed), before the ping could time out")
        await silent.close()

        // Several pings went to the answering client meanwhile; its connection still serves.
        #expect(answering.isUsable)
        #expect(try await check() == .serving)
        await answering.close()

        // The node says why it cut the silent peer off, and cut off only that connection. (The answering client's
        // own close may be logged too: when a ping reached it just before it closed, its kernel resets the
        // connection, which the node notes as it ends.)
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        let closed = result.stderr.split(separator: "\n").filter { $0.contains("connection closed") }
        let cutOff = closed.filter { $0.contains("no answer to keepalive ping") }
        #expect(cutOff.count == 1, "\(result.stderr)")
        #expect(closed.count - cutOff.count <= 1, "\(result.stderr)")
    }

    /// A notification subscription never ends by itself: when the node stops, the stream ends UNAVAILABLE at once
    /// and the node exits without waiting out its drain period (10 s by default).
    @Test(.timeLimit(.minutes(3))) func aSubscriptionEndsAtOnceWhenTheNodeStops() async throws {
        let pki = DevelopmentPKI.shared
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", scratch.path("data"), "--ready-file", readyFile,
                "--cert", pki.path("tsp.pem"), "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem"),
            ])
        defer { node.process.send(SIGTERM) }
        let ready = try #require(try await waitForReadyFile(readyFile, of: node.process))
        let address = try #require(HostPort(parsing: ready.listen))

        let loop = try EventLoop(name: "test-node-subscription")
        defer { loop.shutdown() }
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: pki.path("wallet.pem"), privateKeyFile: pki.path("wallet.key"),
                trustedCAFile: pki.path("ca.pem")))
        let client = RPCClient(
            stream: try await TLSConnection.connect(
                host: address.host, port: address.port, context: context, on: loop))
        let stream = try await client.serverStreaming(TspV1.Notifications.subscribe, TspV1.SubscribeRequest())
        // The stream is open once the queue reports its subscriber connected.
        for _ in 0..<500 {
            let status = try await client.unary(
                TspV1.Notifications.queueStatus, TspV1.QueueStatusRequest(),
                options: CallOptions(timeout: .seconds(30)))
            if status.connected { break }
            try await Task.sleep(for: .milliseconds(10))
        }

        let stopping = ContinuousClock.now
        node.process.send(SIGTERM)
        do {
            for try await _ in stream {}
            Issue.record("the subscription ended without a status")
        } catch let error as RPCError {
            #expect(error.code == .unavailable, "\(error)")
            #expect(error.message.contains("the node is shutting down"), "\(error)")
        }
        let result = try await node.waitForExit()
        let elapsed = ContinuousClock.now - stopping
        #expect(result.status == 0)
        // The log line shows whether the stop waited out the 10 s drain; the time only guards against a hang (under
        // the full suite's load a node's stop has taken over 20 s).
        #expect(elapsed < .seconds(60), "stopping took \(elapsed)")
        #expect(!result.stderr.contains("drain period over"), "\(result.stderr)")
        await client.close()
    }

    /// A call whose request never comes (a peer that sent half a conversation) holds the node only for
    /// --drain-timeout: then it ends UNAVAILABLE, the connection closes and the node exits.
    @Test(.timeLimit(.minutes(3))) func aCallLeftWaitingEndsWhenTheDrainPeriodIsOver() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch, ["--drain-timeout", "1"])
        defer { node.process.send(SIGTERM) }
        let loop = try EventLoop(name: "test-node-drain")
        defer { loop.shutdown() }
        let raw = try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
        let start = WireV1.CallStart(method: HealthV1.Health.check.path)
        try encoder.encode(WireV1.Frame(streamID: 1, kind: .callStart(start)), into: &bytes)
        try await raw.write(bytes)
        // The node has the call once it answers a ping sent after it.
        bytes = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 9))), into: &bytes)
        try await raw.write(bytes)
        var decoder = FrameDecoder()
        var kinds: [String] = []
        var status: WireV1.Status?
        func readUntil(_ done: () -> Bool) async throws {
            while !done(), let chunk = try await raw.read() {
                decoder.feed(chunk)
                while let frame = try decoder.nextFrame() {
                    switch frame.kind {
                    case .hello: kinds.append("hello")
                    case .pong: kinds.append("pong")
                    case .goaway: kinds.append("goaway")
                    case .status(let value) where frame.streamID == 1:
                        kinds.append("status")
                        status = value
                    default: kinds.append("other")
                    }
                }
            }
        }
        try await readUntil { kinds.contains("pong") }

        let stopping = ContinuousClock.now
        node.process.send(SIGTERM)
        try await readUntil { false }
        let result = try await node.waitForExit()
        let elapsed = ContinuousClock.now - stopping
        #expect(kinds == ["hello", "pong", "goaway", "status"], "\(kinds)")
        #expect(status?.code == .unavailable, "\(String(describing: status))")
        #expect(status?.message.contains("did not finish within") == true, "\(String(describing: status))")
        #expect(result.status == 0)
        #expect(elapsed >= .milliseconds(900), "the call was ended after \(elapsed), before the drain period")
        // The status and the log line show what ended the call; the time only guards against a hang (under the full
        // suite's load this stop once took 23 s).
        #expect(elapsed < .seconds(60), "stopping took \(elapsed)")
        #expect(result.stderr.contains("drain period over"), "\(result.stderr)")
        await raw.close()
    }

    @Test(arguments: ["tsp-node", "issuer-node", "wallet-node"])
    func badOptionExitsWithStatusTwo(node: String) async throws {
        let result = try await LaunchedProcess.run(node, ["--plaintext", "--no-such-flag"])
        #expect(result.reason == .exit)
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option '--no-such-flag'"))
        #expect(result.stdout.isEmpty)
    }

    /// With `--log-format json`, a bad option is said in a JSON line, as every other line the node writes, so that
    /// a collector parsing stderr line by line is not broken by the first mistake.
    @Test(arguments: [["--log-format", "json"], ["--log-format=json"]])
    func aBadOptionIsAJSONLineWhenJSONLogsAreAsked(format: [String]) async throws {
        let result = try await LaunchedProcess.run("tsp-node", format + ["--plaintext", "--listen", "bogus"])
        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any]
        #expect(object?["level"] as? String == "error", "\(result.stderr)")
        #expect((object?["msg"] as? String)?.contains("--listen") == true, "\(result.stderr)")
    }

    /// A config file that asks for JSON logs has its own mistakes said in JSON too; they came out as text, and a
    /// `--log-format` on the command line still decides.
    @Test func aConfigFileMistakeIsAJSONLineWhenTheFileAsksForJSON() async throws {
        let scratch = try TemporaryDirectory()
        let config = scratch.path("node.json")
        try #"{"log-format": "json", "listen": "bogus"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try await LaunchedProcess.run("tsp-node", ["--plaintext", "--config", config])
        #expect(result.status == 2)
        let object = try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: Any]
        #expect((object?["msg"] as? String)?.contains("\"listen\" in \(config)") == true, "\(result.stderr)")
        let text = try await LaunchedProcess.run(
            "tsp-node", ["--plaintext", "--config", config, "--log-format", "text"])
        #expect(text.stderr.hasPrefix("tsp-node: \"listen\" in \(config)"), "\(text.stderr)")
    }

    /// A NUL in a config value is refused before anything is made: the path was cut there, a directory made under
    /// the cut name, and the checks that followed looked at that one.
    @Test func aNULInAConfigValueIsRefused() async throws {
        let scratch = try TemporaryDirectory()
        let config = scratch.path("node.json")
        let data = scratch.path("a")
        try #"{"data-dir": "\#(data)\u0000b"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try await LaunchedProcess.run("tsp-node", ["--plaintext", "--config", config])
        #expect(result.status == 2)
        #expect(result.stderr.contains("\"data-dir\" holds a NUL character (\\u0000)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data))
    }

    /// Control characters typed into an option are escaped in its usage error: an escape sequence recoloured the
    /// terminal.
    @Test func aControlCharacterInABadOptionIsEscaped() async throws {
        let result = try await LaunchedProcess.run("tsp-node", ["--plaintext", "--listen", "\u{1B}[31mX"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("got '\\u001b[31mX'"), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"), "\(result.stderr)")
    }

    /// An option's value is echoed in its error, on the node's log stream: a card number typed into the wrong place
    /// shows masked there, as in every log line.
    @Test func aCardNumberInABadOptionIsMasked() async throws {
        let result = try await LaunchedProcess.run(
            "wallet-node", ["--plaintext", "--listen", "4111111111111111", "--tsp", "4111 1111 1111 1111:80"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("************1111"), "\(result.stderr)")
        #expect(!result.stderr.contains("4111111111111111") && !result.stderr.contains("4111 1111"))
    }

    /// A data directory that cannot be made (here under /proc, where nothing can be) is the operator's to fix:
    /// status 2 naming the flag, as a directory that is not writable. It was status 1, as a node failing while running.
    @Test(arguments: ["tsp-node", "issuer-node", "wallet-node"])
    func aDataDirectoryThatCannotBeMadeIsAConfigurationMistake(node: String) async throws {
        let arguments = ["--plaintext", "--data-dir", "/proc/tokenet-test-\(getpid())/data", "--tsp", "127.0.0.1:1"]
        let result = try await LaunchedProcess.run(node, node == "tsp-node" ? Array(arguments.prefix(3)) : arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("--data-dir: cannot create /proc/tokenet-test-\(getpid())/data: check the path"),
            "\(result.stderr)")
    }

    /// A directory, or a link to nothing, where a node keeps its database is named with what to do, status 2: the
    /// directory crashed the node (a trap in its first look at the file), and the link got SQLite's "unable to open
    /// database file" with status 1.
    @Test(arguments: ["tsp-node", "issuer-node", "wallet-node"])
    func aDatabasePathThatIsNoFileIsNamed(node: String) async throws {
        let file = node.replacingOccurrences(of: "-node", with: "") + ".sqlite"
        for (kind, make) in [
            (
                "it is a directory",
                { (path: String) in
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                }
            ),
            (
                "it is a symbolic link to /nonexistent/x.sqlite, which does not exist",
                { (path: String) in
                    try FileManager.default.createSymbolicLink(
                        atPath: path, withDestinationPath: "/nonexistent/x.sqlite")
                }
            ),
        ] {
            let directory = try TemporaryDirectory()
            let data = directory.path("data")
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            try make(data + "/" + file)
            let arguments = ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", data, "--tsp", "127.0.0.1:1"]
            let result = try await LaunchedProcess.run(
                node, node == "tsp-node" ? Array(arguments.prefix(5)) : arguments)
            #expect(result.status == 2, "\(node) \(kind): \(result.stderr)")
            #expect(result.stderr.contains("\(data)/\(file): \(kind)"), "\(node): \(result.stderr)")
        }
    }

    /// A wallet.json the node cannot read (a directory in its place), and an issuer key others may read, are the
    /// operator's to fix: status 2, as for the other configuration files and key files. Both were status 1.
    @Test func anUnreadableWalletConfigurationAndAnExposedIssuerKeyAreConfigurationMistakes() async throws {
        let directory = try TemporaryDirectory()
        let wallet = directory.path("wallet")
        try FileManager.default.createDirectory(atPath: wallet + "/wallet.json", withIntermediateDirectories: true)
        let refused = try await LaunchedProcess.run(
            "wallet-node", ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", wallet, "--tsp", "127.0.0.1:1"])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("cannot read \(wallet)/wallet.json"), "\(refused.stderr)")

        // Refused for its mode before it is read: any file stands for the key.
        let issuer = directory.path("issuer")
        try FileManager.default.createDirectory(atPath: issuer, withIntermediateDirectories: true)
        let key = issuer + "/issuer-key.pem"
        try Data("key".utf8).write(to: URL(fileURLWithPath: key))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: key)
        let exposed = try await LaunchedProcess.run(
            "issuer-node", ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", issuer])
        #expect(exposed.status == 2, "\(exposed.stderr)")
        #expect(exposed.stderr.contains("run chmod 600"), "\(exposed.stderr)")
    }

    /// The wallet cannot run without its TSP: `--help` says so, and a start without `--tsp` is refused before the
    /// data directory is made (it was made, then the node stopped).
    @Test func aWalletWithoutItsTSPIsRefusedBeforeItMakesAnything() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let result = try await LaunchedProcess.run("wallet-node", ["--plaintext", "--data-dir", data])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--tsp is required: this node calls the tsp-node"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data))
        let help = try await LaunchedProcess.run("wallet-node", ["--help"])
        #expect(help.stdout.contains("Address of the token service provider (tsp-node). Required."))
    }

    /// A TSP database that is not a database, or is damaged: the file named with what to do, status 2 as the
    /// wallet and the issuer say it. It was status 1, as a node that fails while running, with SQLite's words alone.
    @Test func aDamagedTSPDatabaseIsNamedWithWhatToDo() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 100).write(to: URL(fileURLWithPath: data + "/tsp.sqlite"))
        let result = try await LaunchedProcess.run(
            "tsp-node", ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", data])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("tsp.sqlite is damaged: restore it from a backup, with its vault key"),
            "\(result.stderr)")
        #expect(!result.stdout.contains("READY"))
    }

    /// A node on another party's data directory is refused before it writes there: it started as a new, empty
    /// node, beside the other's database, and took over files the parties share by name (`node-instance`).
    @Test func aNodeOnAnotherPartysDataDirectoryIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: data + "/wallet.sqlite"))
        let before = try FileManager.default.contentsOfDirectory(atPath: data).sorted()
        let result = try await LaunchedProcess.run(
            "tsp-node", ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", data])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "the data directory \(data) holds wallet.sqlite, the database of a wallet-node: each node needs a "
                    + "data directory of its own; give this tsp-node another --data-dir"), "\(result.stderr)")
        #expect(!result.stdout.contains("READY"))
        // Nothing was written there, not even the lock file.
        #expect(try FileManager.default.contentsOfDirectory(atPath: data).sorted() == before)
    }

    /// A directory another party used holds its keys even without its database: refused as well.
    @Test(arguments: [
        ("issuer-vault.key", NodeSpec.wallet, "the vault key of an issuer-node"),
        ("keys/data-vault.key", NodeSpec.issuer, "the vault key of a tsp-node"),
        ("node-instance", NodeSpec.tsp, "the instance file of a wallet-node or an issuer-node"),
    ])
    func aDirectoryHoldingAnotherPartysKeysIsRefused(file: String, spec: NodeSpec, named: String) throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path("keys"), withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: directory.path(file)))
        let problem = ForeignDatabaseCheck.problem(directory: directory.url.path, spec: spec)
        #expect(
            problem?.contains("holds \(file), \(named): each node needs a data directory of its own") == true,
            "\(problem ?? "")")
    }

    @Test func helpListsThePeersOfEachNode() async throws {
        let wallet = try await LaunchedProcess.run("wallet-node", ["--help"])
        #expect(wallet.status == 0)
        #expect(wallet.stdout.contains("--tsp HOST:PORT"))
        #expect(wallet.stdout.contains("--issuer HOST:PORT"))
        let issuer = try await LaunchedProcess.run("issuer-node", ["--help"])
        #expect(issuer.stdout.contains("--tsp HOST:PORT"))
        #expect(issuer.stdout.contains("--wallet HOST:PORT"))
        #expect(issuer.stdout.contains("--fixtures FILE"))
        #expect(!wallet.stdout.contains("--fixtures"))
    }

    /// Polls for the ready file, bounded by a generous deadline and stopping early if the node exits. It sleeps
    /// between looks rather than blocking a thread of the cooperative pool, which the other tests need meanwhile.
    private func waitForReadyFile(_ path: String, of process: SpawnedProcess) async throws -> ReadyInfo? {
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline, process.isRunning {
            if FileManager.default.fileExists(atPath: path) { return try ReadyFile.read(from: path) }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("tsp-node did not become ready (running: \(process.isRunning))")
        return nil
    }
}
