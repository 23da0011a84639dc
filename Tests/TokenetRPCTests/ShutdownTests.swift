import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A server's shutdown over the in-memory transport: streams that never end by themselves end at once, calls in
/// flight finish, and `endDrain` ends whatever the drain period left, also on a connection whose peer reads nothing.
@Suite struct ShutdownTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// Set once a handler has started.
    final class Started: Sendable {
        private let flag = Atomic<Bool>(false)

        func mark() { flag.store(true, ordering: .releasing) }

        func wait() async throws {
            while !flag.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// A client-streaming handler that reads requests until the client ends them, which the drain tests' clients
    /// never do.
    static func routerReadingRequestsToTheEnd() -> (RPCRouter, Started) {
        let started = Started()
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            started.mark()
            for try await _ in requests {}
            return Scalars()
        }
        return (router, started)
    }

    /// Ends the drain after `seconds` in case a test's expectation fails, so that it cannot hang: a stream left open
    /// would hold the server for good, and the watchdog makes such a failure show as the test's own expectations
    /// rather than as its time limit. Not sooner than 40 s: a full parallel run on two loaded cores held
    /// a test back for over 10 s between the shutdown and the end of its call in flight, which the watchdog then
    /// ended.
    static func watchdog(_ server: RPCServer, after seconds: Int = 40) -> Task<Void, any Error> {
        Task {
            try await Task.sleep(for: .seconds(seconds))
            server.endDrain(reason: "ended by the watchdog")
        }
    }

    /// A stream that never ends by itself (a subscription) ends UNAVAILABLE as soon as the server shuts down, while a
    /// unary call in flight still runs to its end; a health watch is left to say NOT_SERVING before it ends UNAVAILABLE.
    @Test(.timeLimit(.minutes(3))) func shutdownEndsEndlessStreamsAtOnce() async throws {
        let release = Atomic<Bool>(false)
        let started = Atomic<Bool>(false)
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { _, writer, _ in
            try await writer.send(Scalars(fInt32: 1))
            try await Task.sleep(for: .seconds(3600))
        }
        router.unary(Echo.unary) { request, _ in
            started.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
            return request
        }
        let health = HealthService(services: [])
        health.register(on: &router)
        let (server, client, serving) = InMemoryCallTests.connect(router)
        let stream = try await client.serverStreaming(Echo.serverStream, Scalars())
        var responses = stream.makeAsyncIterator()
        #expect(try await responses.next()?.fInt32 == 1)
        let watch = try await client.serverStreaming(HealthV1.Health.watch, HealthV1.HealthCheckRequest())
        var statuses = watch.makeAsyncIterator()
        #expect(try await statuses.next()?.status == .serving)
        let inFlight = Task { try await client.unary(Echo.unary, Scalars(fInt32: 7)) }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }

        health.markAllNotServing()
        server.shutdown()
        let watchdog = Self.watchdog(server)
        defer { watchdog.cancel() }
        do {
            _ = try await responses.next()
            Issue.record("the stream went on after the shutdown")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("the node is shutting down"), "\(error)")
            // What a subscriber tells apart from a failure: the peer stopping cleanly.
            #expect(error.isStreamEndedByShutdown)
        }
        #expect(try await statuses.next()?.status == .notServing)
        let watchEnd = await #expect(throws: RPCError.self) { _ = try await statuses.next() }
        #expect(watchEnd?.code == .unavailable)
        release.store(true, ordering: .releasing)
        #expect(try await inFlight.value.fInt32 == 7)
        await serving.value
    }

    /// A stream that the shutdown ends before its request is complete never runs its handler: the client is told
    /// UNAVAILABLE, whether the server had the call yet or not.
    @Test(.timeLimit(.minutes(3))) func aStreamEndedBeforeItsRequestIsCompleteNeverRuns() async throws {
        let ran = Atomic<Bool>(false)
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { _, _, _ in
            ran.store(true, ordering: .releasing)
            try await Task.sleep(for: .seconds(3600))
        }
        let (server, client, serving) = InMemoryCallTests.connect(router)
        // The request is not ended yet: the handler waits for the half-close until after the shutdown.
        let (requests, responses) = try client.bidirectional(Echo.serverStream.openedAsStreamForTest)
        try await requests.send(Scalars())
        try await Task.sleep(for: .milliseconds(50))
        server.shutdown()
        requests.finish()
        let watchdog = Self.watchdog(server)
        defer { watchdog.cancel() }
        do {
            for try await _ in responses {}
            Issue.record("the stream was not ended")
        } catch let error as RPCError {
            #expect(error.code == .unavailable, "\(error)")
        }
        let handlerRan = ran.load(ordering: .acquiring)
        #expect(!handlerRan)
        await serving.value
    }

    /// A health watch whose request is not complete yet (the client has not half-closed) ends UNAVAILABLE as soon
    /// as the shutdown begins. Its handler, which ends the watch itself at the drain, has not started, so the watch
    /// used to wait out the whole drain.
    @Test(.timeLimit(.minutes(3))) func aHealthWatchWaitingForItsRequestEndsAtOnce() async throws {
        var router = RPCRouter()
        HealthService(services: []).register(on: &router)
        let (server, client, serving) = InMemoryCallTests.connect(router)
        let (requests, responses) = try client.bidirectional(HealthV1.Health.watch.openedAsStreamForTest)
        try await requests.send(HealthV1.HealthCheckRequest())
        try await Task.sleep(for: .milliseconds(50))
        let shutdown = ContinuousClock.now
        server.shutdown()
        // Far beyond the time the watch takes to end, even on a loaded machine (a full test run once took 6.4 s
        // to get there): waiting out the drain would end it only here.
        let watchdog = Self.watchdog(server)
        defer { watchdog.cancel() }
        do {
            for try await _ in responses {}
            Issue.record("the watch was not ended")
        } catch let error as RPCError {
            // UNAVAILABLE, well before the watchdog; the in-memory pipe, which the server closes at once, may fail
            // the client's own last write before it reads the status, hence no check of the message.
            #expect(error.code == .unavailable, "\(error)")
            #expect(!error.message.contains("watchdog"), "\(error)")
            #expect(ContinuousClock.now - shutdown < .seconds(30))
        }
        await serving.value
    }

    /// `endDrain` ends what the drain left — here a call whose client never ends its requests — with UNAVAILABLE,
    /// and the connection closes.
    @Test(.timeLimit(.minutes(3))) func theEndOfTheDrainEndsTheCallsLeft() async throws {
        let (router, started) = Self.routerReadingRequestsToTheEnd()
        let (server, client, serving) = InMemoryCallTests.connect(router)
        let (requests, responses) = try client.bidirectional(Echo.clientStream.openedAsStreamForTest)
        try await requests.send(Scalars())
        try await started.wait()
        server.shutdown()
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.connectionCount == 1, "the call holds the connection during the drain")
        #expect(server.endDrain(reason: "the drain is over") == 1)
        await Self.expectEndedByTheDrain(responses)
        await serving.value
        #expect(server.connectionCount == 0)
    }

    /// Expects the call's responses to end UNAVAILABLE with the reason `endDrain` was given in these tests.
    static func expectEndedByTheDrain(
        _ responses: ResponseStream<Scalars>, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            for try await _ in responses {}
            Issue.record("the call was not ended", sourceLocation: sourceLocation)
        } catch let error as RPCError {
            #expect(error.code == .unavailable, sourceLocation: sourceLocation)
            #expect(error.message == "the drain is over", "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A server over the server's end of an in-memory pipe as `wrap` makes it, and a client-streaming call in
    /// progress on it whose handler has started and reads requests until the client ends them (it never does).
    static func callInProgress<Stream: ByteStream>(_ wrap: (InMemoryByteStream) -> Stream) async throws -> (
        stream: Stream, server: RPCServer, client: RPCClient, responses: ResponseStream<Scalars>,
        serving: Task<Void, Never>
    ) {
        let (router, started) = routerReadingRequestsToTheEnd()
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let stream = wrap(serverEnd)
        let serving = Task { await server.serve(stream) }
        let client = RPCClient(stream: clientEnd)
        let (requests, responses) = try client.bidirectional(Echo.clientStream.openedAsStreamForTest)
        try await requests.send(Scalars())
        try await started.wait()
        return (stream, server, client, responses, serving)
    }

    /// With `--drain-timeout 0` the drain ends while the goaway is still being written. The stream was closed under
    /// that write, and the statuses queued behind it never went: the call's client saw the connection drop instead of
    /// the reason. A write in progress now gets a moment to finish, and the statuses follow it.
    @Test(.timeLimit(.minutes(3))) func aWriteInProgressWhenTheDrainEndsStillDeliversTheStatuses() async throws {
        let (heldStream, server, client, responses, serving) = try await Self.callInProgress(HeldWritingStream.init)

        heldStream.hold()
        server.shutdown()  // its goaway is now being written, and held
        for _ in 0..<5_000 where !heldStream.isWriting { try await Task.sleep(for: .milliseconds(2)) }
        try #require(heldStream.isWriting)
        #expect(server.endDrain(reason: "the drain is over") == 1)
        // The write completes within the drain's grace for a write in progress (500 ms).
        heldStream.release()
        await Self.expectEndedByTheDrain(responses)
        await serving.value
        await client.close()
    }

    /// A peer that stops reading leaves the server's writes waiting; `endDrain` cuts them by closing the stream,
    /// so the connection ends instead of holding the server forever.
    @Test(.timeLimit(.minutes(3))) func theEndOfTheDrainCutsOffAPeerThatReadsNothing() async throws {
        let (stalling, server, client, _, serving) = try await Self.callInProgress(StallingStream.init)

        stalling.stall()
        server.shutdown()  // its goaway waits in a write the peer never takes
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.connectionCount == 1)
        #expect(server.endDrain(reason: "the drain is over") == 1)
        for _ in 0..<500 where server.connectionCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
        try #require(server.connectionCount == 0, "the connection outlived the end of the drain")
        await serving.value
        await client.close()
    }
}

/// The server's end of an in-memory pipe whose writes are no longer taken once `stall()` is called, as with a peer
/// that has stopped reading: they wait until the stream is closed, then fail.
private final class StallingStream: ByteStream {
    private struct State {
        var stalled = false
        var closed = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let base: InMemoryByteStream
    private let state = Mutex(State())

    init(_ base: InMemoryByteStream) { self.base = base }

    var peerIdentity: PeerIdentity? { base.peerIdentity }

    func stall() { state.withLock { $0.stalled = true } }

    func read() async throws -> [UInt8]? { try await base.read() }

    /// Its writes never look at cancellation.
    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws { try await write(bytes) }

    func write(_ bytes: [UInt8]) async throws {
        await withCheckedContinuation { continuation in
            let proceed = state.withLock { state in
                guard state.stalled, !state.closed else { return true }
                state.waiting.append(continuation)
                return false
            }
            if proceed { continuation.resume() }
        }
        if state.withLock({ $0.stalled }) { throw RPCError(.unavailable, "the stream was closed during a write") }
        try await base.write(bytes)
    }

    func close() async {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
        await base.close()
    }
}

/// The server's end of an in-memory pipe whose writes, once `hold()` is called, wait for `release()`, as over a slow
/// link: a write is in progress until the test lets it complete. (Writes that took 200 ms each were over before a
/// test starved of its turn looked for one in progress.)
private final class HeldWritingStream: ByteStream {
    private let base: InMemoryByteStream
    /// Set by `hold()`: writes wait for it to open.
    private let gate = Mutex<CancelStormTests.Gate?>(nil)
    private let writes = Atomic<Int>(0)

    init(_ base: InMemoryByteStream) { self.base = base }

    var peerIdentity: PeerIdentity? { base.peerIdentity }
    var isWriting: Bool { writes.load(ordering: .acquiring) > 0 }

    func hold() { gate.withLock { $0 = CancelStormTests.Gate() } }

    func release() { gate.withLock { $0 }?.open() }

    func read() async throws -> [UInt8]? { try await base.read() }

    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws { try await write(bytes) }

    func write(_ bytes: [UInt8]) async throws {
        writes.add(1, ordering: .acquiringAndReleasing)
        defer { writes.subtract(1, ordering: .acquiringAndReleasing) }
        if let gate = gate.withLock({ $0 }) { await gate.wait() }
        try await base.write(bytes)
    }

    func close() async { await base.close() }
}

extension MethodDescriptor {
    /// The same path opened as a bidirectional call, so the test decides when (and whether) its requests end.
    fileprivate var openedAsStreamForTest: MethodDescriptor<Request, Response> {
        MethodDescriptor(service: service, name: name, kind: .bidirectionalStreaming)
    }
}

/// A call opened on a connection that has closed fails at once as never sent, so a caller can tell that nothing was
/// done (a node closes its connections as it stops; a command that read only "the connection is closed" could not).
@Suite struct ClosedConnectionCallTests {
    @Test(.timeLimit(.minutes(3))) func aCallOnAClosedConnectionSaysItWasNeverSent() async throws {
        let handled = Atomic<Int>(0)
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, _ in
            handled.add(1, ordering: .relaxed)
            return request
        }
        let (server, client, serving) = InMemoryCallTests.connect(router)
        #expect(try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1)).fInt32 == 1)
        await client.close()
        server.shutdown()
        await serving.value
        #expect(!client.isUsable)
        do {
            _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 2))
            Issue.record("a call on a closed connection succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message.hasPrefix(RPCError.closedBeforeSent), "\(error.message)")
            #expect(error.callWasNeverSent)
        }
        #expect(handled.load(ordering: .relaxed) == 1)
    }
}
