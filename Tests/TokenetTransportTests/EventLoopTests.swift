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

    /// Work queued by work runs in a later batch, through the array the previous batch emptied: nothing is lost or
    /// reordered across batches, including a burst larger than the array the loop keeps (1,024 items).
    @Test func workQueuedByWorkRunsInOrderAcrossBatches() async throws {
        let loop = try EventLoop(name: "test-batches")
        defer { loop.shutdown() }
        // Rounds of 1, 2, … 76 items, then one of 3,074; each round is queued by the last item of the one before.
        var bounds = [0]
        for size in 1...76 { bounds.append(bounds.last! + size) }
        bounds.append(6_000)
        let rounds = bounds
        let seen = Mutex<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            @Sendable func queue(round: Int) {
                for index in rounds[round]..<rounds[round + 1] {
                    loop.execute {
                        seen.withLock { $0.append(index) }
                        guard index == rounds[round + 1] - 1 else { return }
                        if round + 2 == rounds.count { continuation.resume() } else { queue(round: round + 1) }
                    }
                }
            }
            loop.execute { queue(round: 0) }
        }
        #expect(seen.withLock { $0 } == Array(0..<6_000))
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

    /// Many timers scheduled out of order, half of them cancelled: the rest fire in deadline order, and the
    /// cancelled ones' heap entries do not pile up.
    @Test(.timeLimit(.minutes(3))) func manyTimersFireInDeadlineOrder() async throws {
        let loop = try EventLoop(name: "test-many-timers")
        defer { loop.shutdown() }
        let fired = Mutex<[Int]>([])
        let offsets = (0..<400).map { ($0 * 7919) % 10007 }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let start = ContinuousClock.now
                for offset in offsets {
                    let timer = loop.scheduleTimer(at: start + .microseconds(offset * 3)) {
                        fired.withLock { $0.append(offset) }
                    }
                    if offset % 2 == 1 { loop.cancelTimer(timer) }
                }
                loop.scheduleTimer(at: start + .milliseconds(40)) { continuation.resume() }
            }
        }
        #expect(fired.withLock { $0 } == offsets.filter { $0 % 2 == 0 }.sorted())
        for _ in 0..<10_000 {
            loop.cancelTimer(loop.scheduleTimer(after: .seconds(60)) {})
        }
        let (entries, live) = loop.shared.withLock { ($0.timerOrder.count, $0.timers.count) }
        #expect(live == 0)
        #expect(entries <= 64, "cancelled timers are compacted away")
    }

    @Test func executeAfterShutdownReportsFailure() throws {
        let loop = try EventLoop(name: "test-shutdown")
        loop.shutdown()
        #expect(loop.execute {} == false)
        loop.shutdown()  // idempotent
    }
}
