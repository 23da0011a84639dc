import Foundation
import Synchronization
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Tokenet's client against an independent server: `Tools/interop/python-server`, Python's `ssl` module and
/// `protoc --python_out` classes, written from Protos/README.md alone. Each scenario holds the client to one part of
/// the specification, and the server reports what the client did (`EVENT` lines).
@Suite(.serialized) final class PythonServerInteropTests {
    typealias Health = HealthV1.Health
    typealias Request = HealthV1.HealthCheckRequest

    let server: SpawnedProcess
    let output: URL
    let ports: [String: UInt16]
    let loop: EventLoop

    init() async throws {
        output = FileManager.default.temporaryDirectory.appendingPathComponent("python-server-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        // Debian's interpreter, where Tools/setup installs python3-protobuf.
        server = try SpawnedProcess(
            "/usr/bin/python3",
            [PackageRoot.path("Tools/interop/python-server"), "--pki", DevelopmentPKI.shared.directory.path],
            standardInput: .nullDevice, standardOutput: .file(output.path))
        var ports: [String: UInt16] = [:]
        let deadline = Date().addingTimeInterval(60)
        var text = ""
        while !text.contains("READY\n") {
            guard server.isRunning, Date() < deadline else { throw ServerDidNotStart(output: text) }
            try await Task.sleep(for: .milliseconds(20))
            text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        }
        for line in text.split(separator: "\n") where line.hasPrefix("PORT ") {
            let words = line.split(separator: " ")
            ports[String(words[1])] = UInt16(words[2])
        }
        self.ports = ports
        loop = try EventLoop(name: "python-server-interop")
    }

    deinit {
        // SIGKILL: the server keeps nothing.
        server.send(SIGKILL)
        server.waitUntilExit()
        try? FileManager.default.removeItem(at: output)
        loop.shutdown()
    }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var output: String
        var description: String { "Tools/interop/python-server did not start: \(output)" }
    }

    /// What the server reported about `scenario`, once `expected` is among it (or after 10 s).
    func events(_ scenario: String, awaiting expected: String? = nil) async throws -> [String] {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            let events = text.split(separator: "\n").filter { $0.hasPrefix("EVENT \(scenario) ") }
                .map { String($0.dropFirst("EVENT \(scenario) ".count)) }
            if expected.map({ events.contains($0) }) ?? true || Date() > deadline { return events }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func connect(_ scenario: String) async throws -> any ByteStream {
        try await Self.connect(port: try #require(ports[scenario]), on: loop)
    }

    static func connect(port: UInt16, on loop: EventLoop) async throws -> any ByteStream {
        let pki = DevelopmentPKI.shared
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: pki.path("wallet.pem"), privateKeyFile: pki.path("wallet.key"),
                trustedCAFile: pki.path("ca.pem")))
        return try await TLSConnection.connect(host: "127.0.0.1", port: port, context: context, on: loop)
    }

    /// The client answers the server's ping while it waits for its response.
    @Test func aPingFromTheServerIsAnswered() async throws {
        let client = RPCClient(stream: try await connect("plain"))
        let response = try await client.unary(Health.check, Request())
        #expect(response.status == .serving)
        #expect(try await events("plain").contains("pong-received"))
        await client.close()
    }

    /// A status's typed details reach the caller as sent.
    @Test func anErrorStatusKeepsItsDetails() async throws {
        let client = RPCClient(stream: try await connect("plain"))
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(Health.check, Request(service: "details"))
        }
        #expect(error.code == .notFound && error.message == "no such thing")
        #expect(error.details == [WireV1.StatusDetail(type: "tokenet.interop.v1.Detail", value: Data([0x08, 0x2A]))])
        await client.close()
    }

    /// The client grants window as it consumes a stream larger than its window, so a server that keeps strictly to
    /// the window streams to the end (Protos/README.md section 7); with a small window, many grants.
    @Test(arguments: [0, 16 * 1024]) func theClientGrantsWindowForALongStream(window: Int) async throws {
        var settings = ConnectionSettings.defaults
        if window > 0 { settings.initialStreamWindow = window }
        let client = RPCClient(stream: try await connect("plain"), settings: settings)
        var count = 0
        for try await response in try await client.serverStreaming(Health.watch, Request(service: "200:10000")) {
            #expect(response.status == .serving)
            count += 1
        }
        #expect(count == 200)
        #expect(try await events("plain", awaiting: "streamed 200 messages").contains("streamed 200 messages"))
        await client.close()
    }

    /// A request larger than the server's announced window can never be sent: the call fails in the client, nothing
    /// is sent, and the connection serves the next call (section 7).
    @Test func aRequestLargerThanThePeersWindowIsNotSent() async throws {
        let client = RPCClient(stream: try await connect("small-window"))
        // The server's hello, with its 4 KiB window, arrives with the first answer.
        #expect(try await client.unary(Health.check, Request()).status == .serving)
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(Health.check, Request(service: String(repeating: "x", count: 10_000)))
        }
        #expect(error.code == .resourceExhausted, "\(error)")
        #expect(try await client.unary(Health.check, Request()).status == .serving)
        #expect(
            try await events("small-window").allSatisfy {
                !$0.hasPrefix("message-received") || $0.hasSuffix(" 0 bytes")
            })
        await client.close()
    }

    /// A goaway that names none of the client's calls as processed: the channel sends the call again on a new
    /// connection, within its deadline (section 9).
    @Test func aCallTheGoawaySaysWasNotProcessedIsSentAgain() async throws {
        let (port, loop) = (try #require(ports["goaway-first"]), loop)
        let backoff = RPCChannel.Backoff(initial: .milliseconds(5), maximum: .milliseconds(20))
        let channel = RPCChannel(backoff: backoff) { try await Self.connect(port: port, on: loop) }
        let response = try await channel.unary(Health.check, Request(), options: CallOptions(timeout: .seconds(10)))
        #expect(response.status == .serving)
        #expect(try await events("goaway-first").contains("goaway-sent stream 1"))
        await channel.close()
    }

    /// A frame above the client's maximum frame size ends the connection with goaway FRAME_TOO_LARGE (sections 2
    /// and 8), and the call fails UNAVAILABLE.
    @Test func aFrameAboveTheClientsLimitEndsTheConnection() async throws {
        let client = RPCClient(stream: try await connect("big-frame"))
        let error = try await #require(throws: RPCError.self) { try await client.unary(Health.check, Request()) }
        #expect(error.code == .unavailable, "\(error)")
        let reported = try await events("big-frame", awaiting: "client-goaway GO_AWAY_CODE_FRAME_TOO_LARGE")
        #expect(reported.contains("client-goaway GO_AWAY_CODE_FRAME_TOO_LARGE"), "\(reported)")
        await client.close()
    }

    /// A server that completes TLS and then says nothing: a call's deadline still ends it on time, directly on a
    /// client and through a channel.
    @Test func aSilentServerCannotHoldACallPastItsDeadline() async throws {
        let client = RPCClient(stream: try await connect("silent"))
        let options = CallOptions(timeout: .milliseconds(300))
        // The bounds below only tell an ended call from one held for good: a full suite on two CPUs can keep a
        // test from resuming for many seconds after its 300 ms deadline.
        var started = ContinuousClock.now
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(Health.check, Request(), options: options)
        }
        #expect(error.code == .deadlineExceeded, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(60))
        let (port, loop) = (try #require(ports["silent"]), loop)
        let channel = RPCChannel { try await Self.connect(port: port, on: loop) }
        started = .now
        let channelError = try await #require(throws: RPCError.self) {
            try await channel.unary(Health.check, Request(), options: options)
        }
        #expect(channelError.code == .deadlineExceeded, "\(channelError)")
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(try await events("silent").contains("connection-held"))
        await channel.close()
    }

    /// A status before the requests end: a client-streaming call that is sending 3 MB through a 1 MiB window the
    /// server will never grant stops and reports the status, and the connection serves the next call.
    @Test func aStatusBeforeTheRequestsEndStopsTheSender() async throws {
        let client = RPCClient(stream: try await connect("early-status"))
        let requests = (0..<300).map { _ in Data(count: 10_000) }
        let started = ContinuousClock.now
        let error = try await #require(throws: RPCError.self) {
            try await client.clientStreaming(path: "/tokenet.interop.v1.Upload/Send", requests: requests)
        }
        #expect(error.code == .failedPrecondition && error.message == "refused before the requests", "\(error)")
        #expect(ContinuousClock.now - started < .seconds(60))
        let next = try await #require(throws: RPCError.self) { try await client.unary(Health.check, Request()) }
        #expect(next.code == .failedPrecondition)
        await client.close()
    }
}
