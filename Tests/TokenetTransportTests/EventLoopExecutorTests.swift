import Synchronization
import Testing

@testable import TokenetTransport

/// The event loop as a task executor: tasks that prefer it run on its thread, interleaved with `execute`'s work in
/// queue order, and a task still preferring a stopped loop runs to its end elsewhere.
@Suite struct EventLoopExecutorTests {
    @Test func aTaskPreferringTheLoopRunsOnItsThreadAcrossSuspensions() async throws {
        let loop = try EventLoop(name: "test-executor")
        defer { loop.shutdown() }
        let onLoop = await Task(executorPreference: loop) { () -> [Bool] in
            var seen = [loop.inEventLoop]
            // Resumed from another thread (the loop's own execute runs on the loop, Task.sleep's timer does not).
            await withCheckedContinuation { continuation in loop.execute { continuation.resume() } }
            seen.append(loop.inEventLoop)
            try? await Task.sleep(for: .milliseconds(1))
            seen.append(loop.inEventLoop)
            return seen
        }.value
        #expect(onLoop == [true, true, true])
        #expect(await Task { loop.inEventLoop }.value == false)
    }

    @Test func jobsAndClosuresRunInQueueOrder() async throws {
        let loop = try EventLoop(name: "test-executor-order")
        defer { loop.shutdown() }
        let seen = OrderLog()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                // Queued from the loop itself: no wake-up, and strictly in order.
                seen.append("closure 1")
                Task(executorPreference: loop) {
                    seen.append("task")
                    loop.execute {
                        seen.append("closure 3")
                        continuation.resume()
                    }
                }
                loop.execute { seen.append("closure 2") }
            }
        }
        #expect(seen.items == ["closure 1", "task", "closure 2", "closure 3"])
    }

    @Test func aTaskPreferringAStoppedLoopStillRuns() async throws {
        let loop = try EventLoop(name: "test-executor-stopped")
        loop.shutdown()
        let ran = await Task(executorPreference: loop) { !loop.inEventLoop }.value
        #expect(ran)
    }
}

/// What ran, in order, from any thread.
private final class OrderLog: Sendable {
    private let state = Mutex<[String]>([])

    var items: [String] { state.withLock { $0 } }

    func append(_ item: String) { state.withLock { $0.append(item) } }
}
