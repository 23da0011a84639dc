import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Every call type and error path over the in-memory transport: a real client and server, no sockets.
@Suite struct InMemoryCallTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// A server serving `router` and a client connected to it, as `peer`.
    static func connect(
        _ router: RPCRouter,
        peer: PeerIdentity? = PeerIdentity(role: .wallet, nodeID: "wallet-1"),
        settings: ConnectionSettings = .defaults,
        callLog: (@Sendable (CallRecord) -> Void)? = nil
    ) -> (RPCServer, RPCClient, Task<Void, Never>) {
        let server = RPCServer(router: router, settings: settings, callLog: callLog)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: peer,
            server: PeerIdentity(role: .tsp, nodeID: "tsp-1")
        )
        let serving = Task { await server.serve(serverEnd) }
        return (server, RPCClient(stream: clientEnd), serving)
    }

    static var echoRouter: RPCRouter {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            if request.fString == "fail" { throw RPCError(.notFound, "no card with that id") }
            if request.fString == "crash" { throw CocoaError(.fileNoSuchFile) }
            if request.fString == "slow" { try await Task.sleep(for: .seconds(30)) }
            if request.fString == "nul" { throw RPCError(.invalidArgument, "no key \"k\u{0}\"") }
            if request.fString == "nul-response" { return Scalars(fString: "k\u{0}") }
            var response = request
            response.fInt32 += 1
            return response
        }
        router.serverStreaming(Echo.serverStream) { request, writer, _ in
            for index in 0..<Int(request.fUint32) {
                try await writer.send(Scalars(fInt32: Int32(index)))
            }
        }
        router.clientStreaming(Echo.clientStream) { requests, _ in
            var total: Int32 = 0
            for try await request in requests { total += request.fInt32 }
            return Scalars(fInt32: total)
        }
        router.bidirectional(Echo.bidi) { requests, writer, _ in
            for try await request in requests {
                try await writer.send(request)
            }
        }
        return router
    }

    @Test func unaryCall() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        let response = try await client.unary(Echo.unary, Scalars(fInt32: 41, fString: "hello"))
        #expect(response == Scalars(fInt32: 42, fString: "hello"))
    }

    /// A handler's error that quotes input holding a NUL (which protobuf-c cannot encode in a string) reaches the
    /// caller with the NUL written as `\0`, and a response holding one fails its own call alone: either used to end
    /// the whole connection with the calls it carried.
    @Test func aNULInAnErrorOrAResponseFailsOnlyItsCall() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        await #expect {
            _ = try await client.unary(Echo.unary, Scalars(fString: "nul"))
        } throws: { error in
            let error = error as? RPCError
            return error?.code == .invalidArgument && error?.message == #"no key "k\0""#
        }
        await #expect {
            _ = try await client.unary(Echo.unary, Scalars(fString: "nul-response"))
        } throws: { error in
            (error as? RPCError)?.code == .`internal`
        }
        let response = try await client.unary(Echo.unary, Scalars(fInt32: 1, fString: "after"))
        #expect(response == Scalars(fInt32: 2, fString: "after"))
    }

    @Test func serverStreamingCall() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        var received: [Int32] = []
        for try await response in try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 5)) {
            received.append(response.fInt32)
        }
        #expect(received == [0, 1, 2, 3, 4])
    }

    @Test func clientStreamingCall() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        let response = try await client.clientStreaming(Echo.clientStream) { writer in
            for value in 1...10 { try await writer.send(Scalars(fInt32: Int32(value))) }
        }
        #expect(response.fInt32 == 55)
    }

    /// A client-streaming call whose requests fail is cancelled: left open, its handler waited for good and the
    /// stream kept the server's only slot, so every later call on the connection was RESOURCE_EXHAUSTED.
    /// No deadline on the call after (a hang trips the time limit): in a loaded full run a 30 s one ran out.
    @Test(.timeLimit(.minutes(5))) func aClientStreamWhoseRequestsFailIsCancelled() async throws {
        struct Unreadable: Error {}
        let (_, client, _) = Self.connect(Self.echoRouter, settings: ConnectionSettings(maxConcurrentStreams: 1))
        await #expect(throws: Unreadable.self) {
            _ = try await client.clientStreaming(Echo.clientStream) { writer in
                try await writer.send(Scalars(fInt32: 1))
                throw Unreadable()
            }
        }
        // The cancel is made at once, or an instant later when the connection's lock is busy.
        for _ in 0..<1_000 where client.connection.core.withLock({ $0.clientCalls.count }) > 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(client.connection.core.withLock { $0.clientCalls.count } == 0)
        let response = try await client.unary(Echo.unary, Scalars(fInt32: 1))
        #expect(response.fInt32 == 2)
    }

    /// A server that answers a client stream before its requests end (here with an error at the first request)
    /// stops a producer that never ends by itself: its next send throws, and the call's result is the server's
    /// status. The sends went on succeeding, and a producer fed from an endless source never learnt of the answer.
    @Test(.timeLimit(.minutes(3))) func aClientStreamTheServerAnsweredEarlyStopsItsProducer() async throws {
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            for try await request in requests where request.fInt32 < 0 {
                throw RPCError(.invalidArgument, "amounts must not be negative")
            }
            return Scalars()
        }
        let (_, client, _) = Self.connect(router)
        let sent = Atomic<Int>(0)
        let error = await #expect(throws: RPCError.self) {
            _ = try await client.clientStreaming(Echo.clientStream) { writer in
                while true {
                    try await writer.send(Scalars(fInt32: -1))
                    sent.add(1, ordering: .relaxed)
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message == "amounts must not be negative")
        #expect(sent.load(ordering: .relaxed) >= 1)
    }

    @Test func bidirectionalCall() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        let (requests, responses) = try client.bidirectional(Echo.bidi)
        var iterator = responses.makeAsyncIterator()
        for value in ["a", "b", "c"] {
            try await requests.send(TestingV1.Choice(pick: .text(value)))
            let echoed = try await iterator.next()
            #expect(echoed?.pick == .text(value))
        }
        requests.finish()
        #expect(try await iterator.next() == nil)
    }

    @Test func handlerErrorsBecomeTheirStatus() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        await #expect(throws: RPCError.self) { try await client.unary(Echo.unary, Scalars(fString: "fail")) }
        do {
            _ = try await client.unary(Echo.unary, Scalars(fString: "fail"))
        } catch let error as RPCError {
            #expect(error.code == .notFound)
            #expect(error.message == "no card with that id")
        }
    }

    /// A request larger than the server's flow-control window could never be sent: the call fails at once with
    /// RESOURCE_EXHAUSTED, and the connection carries on.
    @Test(.timeLimit(.minutes(3))) func aRequestLargerThanTheWindowFailsAtOnce() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter, settings: ConnectionSettings(initialStreamWindow: 1000))
        // The client learns the server's window from its hello: one call first.
        _ = try await client.unary(Echo.unary, Scalars(fString: "hello"))
        let error = await #expect(throws: RPCError.self) {
            _ = try await client.unary(Echo.unary, Scalars(fString: String(repeating: "x", count: 2000)))
        }
        #expect(error?.code == .resourceExhausted)
        #expect(
            error?.message.contains("is larger than the peer accepts: at most 1000 bytes (its flow-control window)")
                == true)
        let response = try await client.unary(Echo.unary, Scalars(fString: String(repeating: "y", count: 900)))
        #expect(response.fString.count == 900)
    }

    /// A 400-byte then a 700-byte message through 1000-byte windows, both ways: 400 consumed is less than half the
    /// window and 700 does not fit in the 600 left, so each side must grant once it has caught up, or the call
    /// waits for good (the time limit then fails the test). No call deadline, and no more round trips than the case
    /// needs: under the whole suite's load each round trip can take seconds (this test took 120 s there with
    /// twice as many), and a deadline would fail a call that is merely slow.
    @Test(.timeLimit(.minutes(5))) func messagesLargerThanHalfTheWindowKeepFlowing() async throws {
        let small = ConnectionSettings(initialStreamWindow: 1000)
        let server = RPCServer(router: Self.echoRouter, settings: small)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .wallet, nodeID: "wallet-1"), server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let serving = Task { await server.serve(serverEnd) }
        defer { serving.cancel() }
        let client = RPCClient(stream: clientEnd, settings: small)
        _ = try await client.unary(Echo.unary, Scalars(fString: "hello"))  // the client learns the server's window

        let (requests, responses) = try client.bidirectional(Echo.bidi)
        var iterator = responses.makeAsyncIterator()
        for size in [400, 700] {
            let text = String(repeating: "x", count: size)
            try await requests.send(TestingV1.Choice(pick: .text(text)))
            #expect(try await iterator.next()?.pick == .text(text))
        }
        requests.finish()
        #expect(try await iterator.next() == nil)

        let total = try await client.clientStreaming(Echo.clientStream) { writer in
            for size in [400, 700] {
                try await writer.send(Scalars(fInt32: 1, fString: String(repeating: "y", count: size)))
            }
        }
        #expect(total.fInt32 == 2)
    }

    @Test func unexpectedErrorsAreInternalWithoutDetails() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        do {
            _ = try await client.unary(Echo.unary, Scalars(fString: "crash"))
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .internal)
            #expect(error.message == "internal error")
        }
    }

    @Test func unknownMethodIsUnimplemented() async throws {
        var router = RPCRouter()
        router.unary(Echo.clientStream.erasedAsUnaryForTest) { request, _ in request }
        let (_, client, _) = Self.connect(router)
        do {
            _ = try await client.unary(Echo.unary, Scalars())
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unimplemented)
            #expect(error.message == "unknown method /tokenet.testing.v1.Echo/Unary")
        }
    }

    @Test func undecodableRequestIsInvalidArgument() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        let (id, responses) = try client.connection.openCall(
            method: Echo.unary.path,
            metadata: Metadata(),
            timeout: nil
        )
        client.connection.sendRequest(id, Data([0xFF, 0xFF, 0xFF]))
        client.connection.endRequests(id)
        do {
            for try await _ in responses {}
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("not a valid tokenet.testing.v1.Scalars"))
        }
    }

    @Test(.timeLimit(.minutes(3))) func deadlineExceeded() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter)
        do {
            _ = try await client.unary(
                Echo.unary, Scalars(fString: "slow"), options: CallOptions(timeout: .milliseconds(100)))
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .deadlineExceeded)
        }
    }

    @Test func clientCancelReachesTheHandler() async throws {
        let handlerCancelled = Atomic<Bool>(false)
        let handlerStarted = Atomic<Bool>(false)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            handlerStarted.store(true, ordering: .releasing)
            do {
                try await Task.sleep(for: .seconds(30))
            } catch {
                handlerCancelled.store(true, ordering: .releasing)
                throw error
            }
            return request
        }
        let (_, client, _) = Self.connect(router)
        let call = Task { try await client.unary(Echo.unary, Scalars()) }
        while !handlerStarted.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        call.cancel()
        await #expect(throws: RPCError.self) { try await call.value }
        for _ in 0..<400 where !handlerCancelled.load(ordering: .acquiring) {
            try await Task.sleep(for: .milliseconds(5))
        }
        let cancelled = handlerCancelled.load(ordering: .acquiring)
        #expect(cancelled)
    }

    @Test func rolesAreEnforced() async throws {
        var router = RPCRouter()
        router.unary(Echo.unary, allowedRoles: [.operator]) { request, _ in request }
        let (_, client, _) = Self.connect(router, peer: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        do {
            _ = try await client.unary(Echo.unary, Scalars())
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .permissionDenied)
            #expect(error.message == "role wallet may not call /tokenet.testing.v1.Echo/Unary (allowed: operator)")
        }
    }

    @Test func manyConcurrentCallsOnOneConnection() async throws {
        let (_, client, _) = Self.connect(Self.echoRouter, settings: ConnectionSettings(maxConcurrentStreams: 1000))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let response = try await client.unary(Echo.unary, Scalars(fInt32: Int32(index)))
                    #expect(response.fInt32 == Int32(index) + 1)
                }
            }
            try await group.waitForAll()
        }
    }

    @Test(.timeLimit(.minutes(3))) func excessConcurrentCallsAreRefused() async throws {
        // The handler counts the calls it serves and holds them: the third call is made once both are open.
        let started = Mutex(0)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            started.withLock { $0 += 1 }
            try await Task.sleep(for: .seconds(120))
            return request
        }
        let (_, client, _) = Self.connect(router, settings: ConnectionSettings(maxConcurrentStreams: 2))
        let slow = (0..<2).map { _ in Task { try await client.unary(Echo.unary, Scalars(fString: "slow")) } }
        while started.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(5)) }
        do {
            _ = try await client.unary(Echo.unary, Scalars())
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .resourceExhausted)
        }
        for task in slow { task.cancel() }
    }

    @Test func traceIDAndDeadlinePropagateToNestedCalls() async throws {
        // A downstream server records what it sees; the upstream handler calls it. The deadline is long: the test
        // checks that it is passed on, and the whole suite running at once on two CPUs once took over 60 s to let
        // the two calls through.
        let seen = Mutex<(String?, ContinuousClock.Instant?)>((nil, nil))
        var downstreamRouter = RPCRouter()
        downstreamRouter.unary(Echo.unary) { request, context in
            seen.withLock { $0 = (context.traceID, context.deadline) }
            return request
        }
        let (_, downstream, _) = Self.connect(downstreamRouter)
        var upstreamRouter = RPCRouter()
        upstreamRouter.unary(Echo.unary) { request, _ in
            try await downstream.unary(Echo.unary, request)
        }
        let (_, client, _) = Self.connect(upstreamRouter)
        var metadata = Metadata()
        metadata.set(Metadata.traceIDKey, .text("00000000000000aa"))
        _ = try await client.unary(
            Echo.unary, Scalars(), options: CallOptions(timeout: .seconds(600), metadata: metadata))
        let (traceID, deadline) = seen.withLock { $0 }
        #expect(traceID == "00000000000000aa")
        let remaining = try #require(deadline) - ContinuousClock.now
        #expect(remaining > .zero && remaining <= .seconds(600))
    }

    /// A handler's own call made with `CallOptions.answeringInTime` is given the served call's time less a fifth
    /// (at most a second), so that the handler can answer, naming the peer that did not, before its caller gives up.
    @Test func aHandlersOwnCallLeavesItTimeToAnswer() throws {
        #expect(CallOptions.leavingRoomToAnswer(.seconds(10)) == .seconds(9))
        #expect(CallOptions.leavingRoomToAnswer(.seconds(2)) == .milliseconds(1600))
        #expect(CallOptions.answeringInTime.timeout == nil)
        let served = ServerContext(
            method: "/x.Y/Z", metadata: Metadata(), peer: nil, deadline: .now + .seconds(10), traceID: "0000000000000ab"
        )
        let timeout = try #require(ServerContext.$current.withValue(served) { CallOptions.answeringInTime.timeout })
        #expect(timeout <= .seconds(9) && timeout > .seconds(8), "\(timeout)")
    }

    @Test func gracefulShutdownLetsInFlightCallsFinish() async throws {
        let release = Atomic<Bool>(false)
        let started = Atomic<Bool>(false)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            started.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
            return request
        }
        let (server, client, serving) = Self.connect(router)
        let inFlight = Task { try await client.unary(Echo.unary, Scalars(fInt32: 7)) }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        server.shutdown()
        try await Task.sleep(for: .milliseconds(50))
        await #expect(throws: RPCError.self) { try await client.unary(Echo.unary, Scalars()) }
        release.store(true, ordering: .releasing)
        #expect(try await inFlight.value.fInt32 == 7)
        await serving.value
    }

    /// The "server" reads nothing and vanishes mid-call, before its hello. Over a plaintext stream (no peer
    /// identity) that is what a TLS port does to a plaintext client, and the message says so; over an
    /// authenticated stream it does not.
    @Test(arguments: [false, true])
    func lostConnectionFailsCallsWithUnavailable(authenticated: Bool) async throws {
        let tsp = PeerIdentity(role: .tsp, nodeID: "tsp-1")
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(server: authenticated ? tsp : nil)
        let client = RPCClient(stream: clientEnd)
        let call = Task { try await client.unary(Echo.unary, Scalars()) }
        try await Task.sleep(for: .milliseconds(50))
        await serverEnd.close()
        do {
            _ = try await call.value
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message.hasPrefix("connection lost: the peer closed the connection"), "\(error)")
            #expect(error.message.contains("before its hello (if the peer uses TLS") == !authenticated, "\(error)")
        }
    }

    /// The same, when the connection is gone before the call is opened: the call is told why.
    @Test func aCallOnAConnectionThatEndedBeforeItsHelloSaysWhy() async throws {
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let client = RPCClient(stream: clientEnd)
        await serverEnd.close()
        while client.isUsable { try await Task.sleep(for: .milliseconds(5)) }
        let error = await #expect(throws: RPCError.self) { _ = try await client.unary(Echo.unary, Scalars()) }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.contains("the peer closed the connection before its hello (if the peer uses TLS") == true,
            "\(String(describing: error))")
    }

    /// A plaintext client's first write can meet a TLS port's close before its read does: the calls still end with
    /// what the read says (the peer closed before its hello, and the hint), not with the write's failure.
    @Test func aWriteThatMeetsThePeersCloseBeforeItsHelloSaysWhy() async throws {
        let client = RPCClient(stream: PeerGoneStream())
        let error = await #expect(throws: RPCError.self) { _ = try await client.unary(Echo.unary, Scalars()) }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.contains("before its hello (if the peer uses TLS, connect without --plaintext)") == true,
            "\(String(describing: error))")
        await client.close()
    }
}

/// A plaintext stream whose peer closed without a word: a write fails as it does once the transport has seen the
/// close, and the read sees the end only after that failure, the order that lost the reason.
private final class PeerGoneStream: ByteStream {
    let writeFailed = AsyncStream.makeStream(of: Never.self)
    var peerIdentity: PeerIdentity? { nil }
    func read() async throws -> [UInt8]? {
        for await _ in writeFailed.stream {}
        return nil
    }
    func write(_ bytes: [UInt8]) async throws { try fail() }
    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws { try fail() }
    func close() async { writeFailed.continuation.finish() }

    private func fail() throws {
        writeFailed.continuation.finish()
        throw TransportError.closedByPeer
    }
}

extension MethodDescriptor {
    /// The same path as a unary method, to register a handler under a name the test client does not call.
    fileprivate var erasedAsUnaryForTest: MethodDescriptor<Request, Response> {
        MethodDescriptor(service: service, name: name, kind: .unary)
    }
}
