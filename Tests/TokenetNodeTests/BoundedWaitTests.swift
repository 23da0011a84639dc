import Synchronization
import Testing
import TokenetNode

@Suite(.timeLimit(.minutes(3))) struct BoundedWaitTests {
    @Test func workThatFinishesInTimeIsWaitedFor() async {
        let finished = Mutex(false)
        let inTime = await waitAtMost(.seconds(30)) { finished.withLock { $0 = true } }
        #expect(inTime)
        #expect(finished.withLock { $0 })
    }

    /// The close that hung `tokenet call` ignored cancellation; such work must not hold the caller past the limit.
    @Test func workThatNeverReturnsIsLeftBehindAtTheLimit() async {
        let held = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let started = ContinuousClock.now
        let inTime = await waitAtMost(.milliseconds(100)) {
            await withCheckedContinuation { continuation in held.withLock { $0 = continuation } }
        }
        #expect(!inTime)
        // Not held forever (work that waited for it would never come back, and the suite's time limit would end the
        // test): 100 ms asked, and loaded test runs took 10.8 s and once 40.8 s to get back here.
        #expect(ContinuousClock.now - started < .seconds(150))
        // Let the abandoned work end, so the test leaves no task behind. It may not have started waiting yet.
        while held.withLock({ $0 }) == nil { await Task.yield() }
        held.withLock { $0.take() }?.resume()
    }
}
