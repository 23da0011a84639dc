import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetWire

/// A node's outgoing work ends with the node: background tasks are cancelled, channels close gracefully, and the
/// whole stays within its limit even when a task ignores cancellation.
@Suite(.timeLimit(.minutes(3))) struct NodeOutgoingTests {
    @Test func backgroundTasksAreCancelledAndNothingStartsAfterwards() async {
        let outgoing = NodeOutgoing()
        let ended = Mutex(false)
        outgoing.run {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            ended.withLock { $0 = true }
        }
        #expect(!outgoing.isStopping)
        #expect(await outgoing.close(within: .seconds(30)))
        #expect(outgoing.isStopping)
        #expect(ended.withLock { $0 }, "close returns once the cancelled task has ended")

        let started = Mutex(false)
        outgoing.run { started.withLock { $0 = true } }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!started.withLock { $0 }, "a stopping node starts no new background work")
    }

    /// Work asked for while held waits for `startHeld()`; held work of a node that stops first never runs.
    @Test func heldWorkStartsWhenStartedAndNeverAfterAStop() async throws {
        let outgoing = NodeOutgoing(holdingUntilStarted: true)
        let ran = Mutex(0)
        outgoing.run { ran.withLock { $0 += 1 } }
        try await Task.sleep(for: .milliseconds(50))
        #expect(ran.withLock { $0 } == 0)
        outgoing.startHeld()
        outgoing.run { ran.withLock { $0 += 1 } }
        for _ in 0..<500 where ran.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ran.withLock { $0 } == 2)

        let stopped = NodeOutgoing(holdingUntilStarted: true)
        stopped.run { ran.withLock { $0 += 10 } }
        stopped.cancelTasks()
        stopped.startHeld()
        try await Task.sleep(for: .milliseconds(50))
        #expect(ran.withLock { $0 } == 2)
    }

    @Test func aChannelIsClosedSoLaterCallsFail() async throws {
        let server = RPCServer(router: RPCRouter())
        let serving = Mutex<[Task<Void, Never>]>([])
        let channel = RPCChannel {
            let (client, served) = InMemoryByteStream.pair()
            serving.withLock { $0.append(Task { await server.serve(served) }) }
            return client
        }
        let outgoing = NodeOutgoing()
        outgoing.track(channel)
        let health = HealthV1.Health.Client(channel)
        // Unknown to this router, but answered: the connection is up.
        await #expect(throws: RPCError.self) { _ = try await health.check(HealthV1.HealthCheckRequest()) }
        #expect(await outgoing.close(within: .seconds(30)))
        let error = await #expect(throws: RPCError.self) { _ = try await health.check(HealthV1.HealthCheckRequest()) }
        #expect(error?.code == .unavailable)
        server.shutdown()
        for task in serving.withLock({ $0 }) { await task.value }
    }

    @Test func aTaskThatIgnoresCancellationDoesNotHoldTheStop() async {
        let outgoing = NodeOutgoing()
        let release = Mutex<CheckedContinuation<Void, Never>?>(nil)
        outgoing.run { await withCheckedContinuation { continuation in release.withLock { $0 = continuation } } }
        while release.withLock({ $0 }) == nil { await Task.yield() }
        let started = ContinuousClock.now
        #expect(await !outgoing.close(within: .milliseconds(100)))
        // A task that held the stop would hold it for good: any bound tells the two apart, and a full run on a loaded
        // machine once took 11 s to come back from the 100 ms.
        #expect(ContinuousClock.now - started < .seconds(60))
        release.withLock { $0.take() }?.resume()
    }
}
