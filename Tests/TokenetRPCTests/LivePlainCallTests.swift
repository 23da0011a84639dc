import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Calls over plaintext TCP on loopback (the `--plaintext` debug mode): a PlainListener served by an RPCServer,
/// clients over PlainConnection.
@Suite(.timeLimit(.minutes(3))) struct LivePlainCallTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    struct Harness {
        let loop: EventLoop
        let listener: PlainListener
        let server: RPCServer
        let serving: Task<Void, Never>

        func client() async throws -> RPCClient {
            RPCClient(stream: try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop))
        }

        func stop() async {
            server.shutdown()
            await listener.close()
            serving.cancel()
            loop.shutdown()
        }
    }

    static func start(_ router: RPCRouter = InMemoryCallTests.echoRouter) async throws -> Harness {
        let loop = try EventLoop(name: "rpc-plain-test")
        let listener = try await PlainListener.bind(on: loop)
        let server = RPCServer(router: router, settings: ConnectionSettings(maxConcurrentStreams: 1000))
        let serving = Task { await server.serve(listener: listener) }
        return Harness(loop: loop, listener: listener, server: server, serving: serving)
    }

    @Test func unaryCallOverPlaintext() async throws {
        let harness = try await Self.start()
        let client = try await harness.client()
        let response = try await client.unary(Echo.unary, Scalars(fInt32: 41, fString: "hello"))
        #expect(response == Scalars(fInt32: 42, fString: "hello"))
        await client.close()
        await harness.stop()
    }

    /// A channel that replaces a draining connection (here out of call ids) closes it gracefully: a stream still
    /// running on it gets every response. The connection was dropped instead, its task cancelled, and the stream's
    /// next flow-control write failed every call on it ("write failed: the waiting task was cancelled").
    @Test func aStreamOnAConnectionTheChannelReplacedRunsToItsEnd() async throws {
        let (gateA, openA) = AsyncStream<Void>.makeStream()
        let (gateB, openB) = AsyncStream<Void>.makeStream()
        var router = InMemoryCallTests.echoRouter
        router.serverStreaming(Echo.serverStream) { _, writer, _ in
            try await writer.send(Scalars(fInt32: 1))
            for await _ in gateA { break }
            try await writer.send(Scalars(fInt32: 2))
            for await _ in gateB { break }
            try await writer.send(Scalars(fInt32: 3))
        }
        let harness = try await Self.start(router)
        let (loop, port) = (harness.loop, harness.listener.port)
        let channel = RPCChannel { try await PlainConnection.connect(host: "127.0.0.1", port: port, on: loop) }
        do {
            let first = try await channel.client(before: nil)
            first.connection.core.withLock { $0.machine.nextStreamID = ConnectionStateMachine.largestStreamID }
        }
        var responses = try await channel.serverStreaming(Echo.serverStream, Scalars()).makeAsyncIterator()
        #expect(try await responses.next()?.fInt32 == 1)
        // The stream took the last id: this call goes on a new connection, and the channel lets the first one go.
        #expect(try await channel.unary(Echo.unary, Scalars(fInt32: 1)).fInt32 == 2)
        openA.yield()
        #expect(try await responses.next()?.fInt32 == 2)
        openB.yield()
        #expect(try await responses.next()?.fInt32 == 3)
        #expect(try await responses.next() == nil)
        await channel.close()
        await harness.stop()
    }

    @Test func manyCallsAndAStreamShareOneConnection() async throws {
        let harness = try await Self.start()
        let client = try await harness.client()
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let response = try await client.unary(Echo.unary, Scalars(fInt32: Int32(index), fString: "x"))
                    return response.fInt32 == Int32(index) + 1
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answered == 200)
        // A long server stream on the same connection arrives complete and in order.
        var received: [Int32] = []
        for try await item in try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 20_000)) {
            received.append(item.fInt32)
        }
        #expect(received == Array(0..<20_000))
        await client.close()
        await harness.stop()
    }

    @Test func roleRestrictedMethodRefusesPlaintextCallersButOthersAnswer() async throws {
        var router = RPCRouter()
        router.unary(Echo.unary, allowedRoles: [.operator]) { request, _ in request }
        router.serverStreaming(Echo.serverStream) { request, writer, _ in
            for index in 0..<Int(request.fUint32) { try await writer.send(Scalars(fInt32: Int32(index))) }
        }
        let harness = try await Self.start(router)
        let client = try await harness.client()
        let error = await #expect(throws: RPCError.self) { try await client.unary(Echo.unary, Scalars(fInt32: 1)) }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("plaintext") == true)
        var streamed = 0
        for try await _ in try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 3)) { streamed += 1 }
        #expect(streamed == 3, "methods open to any peer still answer on the same connection")
        await client.close()
        await harness.stop()
    }

    @Test func plaintextClientOfATLSServerGetsAnErrorNotAHang() async throws {
        let harness = try await LiveTLSCallTests.start()
        let connection = try await PlainConnection.connect(
            host: "127.0.0.1", port: harness.listener.port, on: harness.loop)
        let client = RPCClient(stream: connection)
        let error = await #expect(throws: RPCError.self) {
            try await client.unary(Echo.unary, Scalars(fInt32: 1), options: CallOptions(timeout: .seconds(30)))
        }
        #expect(error?.code != .deadlineExceeded, "the refusal is reported, not waited out")
        #expect(error?.message.contains("connect without --plaintext") == true, "\(String(describing: error))")
        await client.close()
        await harness.stop()
    }

    @Test func tlsClientOfAPlaintextServerFailsItsHandshake() async throws {
        let harness = try await Self.start()
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: LiveTLSCallTests.path("wallet.pem"),
                privateKeyFile: LiveTLSCallTests.path("wallet.key"),
                trustedCAFile: LiveTLSCallTests.path("ca.pem")
            )
        )
        let error = await #expect(throws: TransportError.self) {
            try await TLSConnection.connect(
                host: "127.0.0.1", port: harness.listener.port, context: context, on: harness.loop,
                options: TLSConnection.Options(handshakeTimeout: .seconds(30)))
        }
        #expect(error?.code != .timeout, "the failure is reported, not waited out")
        #expect(error?.message.contains("the peer does not speak TLS") == true, "\(String(describing: error))")
        await harness.stop()
    }

    /// A call that arrives with a timeout of zero is answered DEADLINE_EXCEEDED without running its handler. With
    /// handlers on the connection's loop the echo used to run before the deadline timer could fire, and the call
    /// was answered OK.
    @Test func aCallWithATimeoutOfZeroIsNotHandled() async throws {
        let loop = try EventLoop(name: "rpc-plain-zero-timeout")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let server = RPCServer(router: InMemoryCallTests.echoRouter, handlersOnConnectionLoop: true)
        let serving = Task { await server.serve(listener: listener) }
        let raw = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        let encoder = FrameEncoder()
        var bytes: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
        let start = WireV1.CallStart(method: Echo.unary.path, timeoutMicros: 0)
        try encoder.encode(WireV1.Frame(streamID: 1, kind: .callStart(start)), into: &bytes)
        try encoder.encode(WireV1.Frame(streamID: 1, kind: .message(WireV1.Message())), into: &bytes)
        try encoder.encode(WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())), into: &bytes)
        try await raw.write(bytes)
        var decoder = FrameDecoder()
        var status: WireV1.Status?
        while status == nil, let chunk = try await raw.read() {
            decoder.feed(chunk)
            while let frame = try decoder.nextFrame() {
                if frame.streamID == 1, case .status(let value) = frame.kind { status = value }
            }
        }
        #expect(status?.code == .deadlineExceeded, "\(String(describing: status))")
        await raw.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }

    /// A connection the server closes as it shuts down is logged as a clean close, even when its peer had not
    /// spoken yet; a peer that leaves without a word is a problem worth a line.
    @Test func connectionsClosedByAShutdownAreNoProblem() async throws {
        let loop = try EventLoop(name: "rpc-plain-shutdown-log")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let records = Mutex<[ConnectionRecord]>([])
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter, connectionLog: { record in records.withLock { $0.append(record) } })
        let serving = Task { await server.serve(listener: listener) }
        let leaving = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        await leaving.close()
        for _ in 0..<500 where records.withLock({ $0.count }) < 1 { try await Task.sleep(for: .milliseconds(10)) }
        let quiet = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        for _ in 0..<500 where server.connectionCount < 1 { try await Task.sleep(for: .milliseconds(10)) }
        server.shutdown()
        for _ in 0..<500 where records.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        let problems = records.withLock { $0.map(\.problem) }
        #expect(problems.count == 2)
        #expect(problems.first == "the peer closed the connection before its hello", "\(problems)")
        #expect(problems.last == .some(nil), "\(problems)")
        await quiet.close()
        await listener.close()
        serving.cancel()
    }

    @Test func serverSeesNoPeerIdentity() async throws {
        var router = RPCRouter()
        router.unary(Echo.unary) { _, context in Scalars(fString: context.peer?.uri ?? "none") }
        let harness = try await Self.start(router)
        let client = try await harness.client()
        #expect(try await client.unary(Echo.unary, Scalars()).fString == "none")
        await client.close()
        await harness.stop()
    }
}
