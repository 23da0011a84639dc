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
        // Not held forever: 100 ms asked, and a loaded test run once took 10.8 s to get back here.
        #expect(ContinuousClock.now - started < .seconds(40))
        // Let the abandoned work end, so the test leaves no task behind. It may not have started waiting yet.
        while held.withLock({ $0 }) == nil { await Task.yield() }
        held.withLock { $0.take() }?.resume()
    }
}
