import Foundation
import Synchronization
import Testing
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A connection's pongs leave from its event loop even while the executor its tasks run on is held. A process whose
/// cooperative pool other work held for longer than its peer's keepalive timeout (the test runner's two threads,
/// blocked by commands it waits for) lost connections for pings its loop had read and answered at once: the pong
/// waited behind the writer task's last write, which only that task, once it ran again, marked done.
@Suite(.timeLimit(.minutes(3))) struct StarvedExecutorPongTests {
    typealias Scalars = TestingV1.Scalars
    typealias Echo = InMemoryCallTests.Echo

    /// The server's end of a plaintext connection that, once its first bytes (the server's hello) are handed over,
    /// holds `executor` (standing for the cooperative pool) until `release()`.
    final class HoldingAfterFirstWrite: ByteStream {
        private let base: PlainConnection
        private let executor: EventLoop
        private let held = DispatchSemaphore(value: 0)
        private let holding = DispatchSemaphore(value: 0)
        private let armed = Atomic<Bool>(true)

        init(_ base: PlainConnection, holding executor: EventLoop) {
            self.base = base
            self.executor = executor
        }

        var peerIdentity: PeerIdentity? { base.peerIdentity }
        var loop: EventLoop? { base.loop }

        /// Waits until the executor is held; false after 60 s.
        func waitUntilHolding() -> Bool { holding.wait(timeout: .now() + 60) == .success }

        func release() { held.signal() }

        private func holdExecutorOnce() {
            guard armed.exchange(false, ordering: .acquiringAndReleasing) else { return }
            let (held, holding) = (held, holding)
            _ = executor.execute {
                holding.signal()
                held.wait()
            }
        }

        func read() async throws -> [UInt8]? { try await base.read() }

        func write(_ bytes: [UInt8]) async throws {
            holdExecutorOnce()
            try await base.write(bytes)
        }

        func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
            holdExecutorOnce()
            try await base.writeIgnoringCancellation(bytes)
        }

        func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
            holdExecutorOnce()
            base.writeOnLoop(bytes, completion: completion)
        }

        func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
            base.receive(handler)
        }

        func peerSharesCPU() -> Bool { base.peerSharesCPU() }

        func close() async { await base.close() }
    }

    @Test func pongsLeaveWhileTheConnectionsExecutorIsHeld() async throws {
        let serverLoop = try EventLoop(name: "pong-server-io")
        let executor = try EventLoop(name: "pong-server-tasks")
        let clientLoop = try EventLoop(name: "pong-client-io")
        defer {
            serverLoop.shutdown()
            executor.shutdown()
            clientLoop.shutdown()
        }
        let listener = try await PlainListener.bind(on: serverLoop)
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let accepted = Mutex<HoldingAfterFirstWrite?>(nil)
        let serving = Task {
            for await connection in listener.connections {
                let stream = HoldingAfterFirstWrite(connection, holding: executor)
                accepted.withLock { $0 = stream }
                // The connection's tasks (its writer among them) run on `executor`.
                await withTaskExecutorPreference(executor) { await server.serve(stream) }
                break
            }
        }
        // The client pings every 200 ms and gives up on a ping unanswered for 3 s.
        let client = RPCClient(
            stream: try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: clientLoop),
            timers: ConnectionTimers(keepaliveInterval: .milliseconds(200), keepaliveTimeout: .seconds(3)))
        var stream: HoldingAfterFirstWrite?
        for _ in 0..<3_000 where stream == nil {
            stream = accepted.withLock { $0 }
            if stream == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let held = try #require(stream, "the server accepted no connection")
        defer { held.release() }
        try #require(try await offThePool { held.waitUntilHolding() }, "the server's executor was never held")

        // Long enough for the client's keepalive to give up twice over were the pongs held.
        try await Task.sleep(for: .seconds(7))
        let (outstanding, problem) = client.connection.core.withLock { ($0.outstandingPing, $0.problem) }
        #expect(client.isUsable, "\(String(describing: problem))")
        if let outstanding {
            // A ping may be on its way back right now; never one older than the keepalive timeout.
            #expect(ContinuousClock.now - outstanding.sentAt < .seconds(3), "\(outstanding)")
        }

        held.release()
        await client.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }

    /// A client whose own tasks have no thread yet (a test runner whose pool waits for commands) reads the server's
    /// hello and answers its pings from the moment it exists. Read only once its `run()` got a thread, it lost the
    /// connection to the server's keepalive while its first call waited for the hello that nothing read.
    @Test func aClientAnswersPingsBeforeItsTasksGetAThread() async throws {
        let serverLoop = try EventLoop(name: "early-server-io")
        let executor = try EventLoop(name: "early-client-tasks")
        let clientLoop = try EventLoop(name: "early-client-io")
        defer {
            serverLoop.shutdown()
            executor.shutdown()
            clientLoop.shutdown()
        }
        let listener = try await PlainListener.bind(on: serverLoop)
        // The server pings every 200 ms and gives up on a ping unanswered for 2 s.
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter,
            timers: ConnectionTimers(keepaliveInterval: .milliseconds(200), keepaliveTimeout: .seconds(2)))
        let serving = Task { await server.serve(listener: listener) }
        defer {
            server.shutdown()
            serving.cancel()
        }
        let held = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        _ = executor.execute {
            holding.signal()
            held.wait()
        }
        let released = Atomic<Bool>(false)
        let release = { if !released.exchange(true, ordering: .acquiringAndReleasing) { held.signal() } }
        defer { release() }
        try #require(try await offThePool { holding.wait(timeout: .now() + 60) == .success })

        let client = RPCClient(
            stream: try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: clientLoop),
            settings: .defaults, timers: ConnectionTimers(), runningOn: executor)
        // A call opened now waits for the server's hello (its task runs here, not on the held executor).
        let call = Task { try await client.unary(Echo.unary, Scalars(fInt32: 1)) }
        // Long enough for the server's keepalive to give up twice over were the pings left unread.
        try await Task.sleep(for: .seconds(5))
        let problem = client.connection.core.withLock { $0.problem }
        #expect(problem == nil, "\(problem ?? "")")
        #expect(server.connectionCount == 1, "the server closed the connection")

        release()
        #expect(try await call.value == Scalars(fInt32: 2))
        #expect(try await client.unary(Echo.unary, Scalars(fInt32: 7)) == Scalars(fInt32: 8))
        await client.close()
        await listener.close()
    }
}
