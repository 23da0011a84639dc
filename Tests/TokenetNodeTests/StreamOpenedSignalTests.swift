import Synchronization
import Testing

@testable import TokenetNode

@Suite struct StreamOpenedSignalTests {
    /// A check cut short by the node's stop is no failure: nothing is reported and nothing tried again. Before, a
    /// node that stopped during its check logged a warning that it would try again, which it never did.
    @Test func aCheckCutShortByTheStopIsNoFailure() async {
        let signal = StreamOpenedSignal()
        let reported = Mutex(0)
        let (started, checking) = AsyncStream.makeStream(of: Void.self)
        signal.streamOpened()
        let loop = Task {
            await signal.checkEachTime(
                sleep: { _ in },
                check: {
                    checking.yield()
                    try await Task.sleep(for: .seconds(3600))
                },
                failed: { _, _ in
                    reported.withLock { $0 += 1 }
                    return .retry
                })
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        loop.cancel()
        await loop.value
        #expect(reported.withLock { $0 } == 0)
    }

    /// A check that fails while the node runs is reported and tried again after the first wait.
    @Test func aFailedCheckIsReportedAndTriedAgain() async {
        let signal = StreamOpenedSignal()
        let reported = Mutex<[Int]>([])
        let waits = Mutex<[UInt64]>([])
        let attempts = Mutex(0)
        let (done, finished) = AsyncStream.makeStream(of: Void.self)
        signal.streamOpened()
        let loop = Task {
            await signal.checkEachTime(
                sleep: { wait in waits.withLock { $0.append(wait) } },
                check: {
                    let attempt = attempts.withLock {
                        $0 += 1
                        return $0
                    }
                    if attempt < 3 { throw CancellationError() }
                    finished.yield()
                },
                failed: { _, failuresBefore in
                    reported.withLock { $0.append(failuresBefore) }
                    return .retry
                })
        }
        var iterator = done.makeAsyncIterator()
        _ = await iterator.next()
        loop.cancel()
        await loop.value
        #expect(reported.withLock { $0 } == [0, 1])
        #expect(waits.withLock { $0 } == Array(StreamOpenedSignal.retryWaitsMs.prefix(2)))
    }
}
