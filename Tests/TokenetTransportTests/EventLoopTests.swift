import Synchronization
import Testing

@testable import TokenetTransport

@Suite struct EventLoopTests {
    @Test func executeRunsTasksOnTheLoopThreadInOrder() async throws {
        let loop = try EventLoop(name: "test-execute")
        defer { loop.shutdown() }
        #expect(!loop.inEventLoop)
        let seen = Mutex<[Int]>([])
        for index in 0..<100 {
            loop.execute {
                precondition(loop.inEventLoop)
                seen.withLock { $0.append(index) }
            }
        }
        await withCheckedContinuation { continuation in loop.execute { continuation.resume() } }
        #expect(seen.withLock { $0 } == Array(0..<100))
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesDoNot() async throws {
        let loop = try EventLoop(name: "test-timers")
        defer { loop.shutdown() }
        let fired = Mutex<[String]>([])
        let cancelled = loop.scheduleTimer(after: .milliseconds(5)) { fired.withLock { $0.append("cancelled") } }
        loop.cancelTimer(cancelled)
        // Both are scheduled from one loop task, so no timer can fire between the two calls.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                loop.scheduleTimer(after: .milliseconds(50)) {
                    fired.withLock { $0.append("late") }
                    continuation.resume()
                }
                loop.scheduleTimer(after: .milliseconds(1)) { fired.withLock { $0.append("early") } }
            }
        }
        #expect(fired.withLock { $0 } == ["early", "late"])
    }

    @Test func executeAfterShutdownReportsFailure() throws {
        let loop = try EventLoop(name: "test-shutdown")
        loop.shutdown()
        #expect(loop.execute {} == false)
        loop.shutdown()  // idempotent
    }
}
