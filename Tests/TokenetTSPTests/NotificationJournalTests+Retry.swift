import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetTSP

/// A sleep the test ends by hand: each call hands the test its delay and waits to be woken. Once closed, a sleep
/// throws (as a cancelled one does) and the requests end, so a loop that sleeps when it should not ends the test
/// with a failed expectation rather than a hang.
final class ManualSleep: Sendable {
    struct Request: Sendable {
        var delay: Duration
        var wake: CheckedContinuation<Void, Never>
    }

    let requests: AsyncStream<Request>
    private let continuation: AsyncStream<Request>.Continuation
    private let closed = Mutex(false)

    init() { (requests, continuation) = AsyncStream.makeStream() }

    @Sendable func sleep(_ delay: Duration) async throws {
        if closed.withLock({ $0 }) { throw CancellationError() }
        await withCheckedContinuation { continuation.yield(Request(delay: delay, wake: $0)) }
    }

    func close() {
        closed.withLock { $0 = true }
        continuation.finish()
    }
}

/// The journal's retry, and its drains: a message the broker could not take goes out without waiting for the next
/// change, and once only when changes race after the failure.
extension NotificationJournalTests {
    static func journal(_ store: TSPStore, _ publisher: RecordingPublisher) -> NotificationJournal {
        NotificationJournal(
            store: store, notifications: publisher, logger: Logger(node: "tsp-node", sink: MemoryLogSink()))
    }

    static func change(
        _ store: TSPStore, _ event: TokenLifecycleStateMachine.Event, at offset: UInt64
    ) throws -> Journaled<TokenStateChange> {
        try store.changeTokenState(
            card, event: event, actor: "tsp", reason: "LOST_CARD", traceID: "trace-\(offset)",
            nowMs: OTPStoreTests.t0 + offset,
            announce: { TSPService.cardState($0, reason: "LOST_CARD", initiator: "tsp") }, authorize: { _ in })
    }

    /// The broker fails, then recovers, and no further change comes: the retry publishes the row, after delays that
    /// grow to their cap while the broker keeps failing.
    @Test func theRetryPublishesWhatTheBrokerCouldNotTakeWithoutAnotherChange() async throws {
        let store = try Self.makeStore()
        let publisher = RecordingPublisher()
        let journal = Self.journal(store, publisher)
        publisher.fail(true)
        let entry = try #require(try Self.suspend(store).notifications.first)
        await journal.publish([entry], log: journal.logger)
        #expect(journal.isBacklogged)

        let sleep = ManualSleep()
        var sleeps = sleep.requests.makeAsyncIterator()
        let backoff = RPCChannel.Backoff(initial: .seconds(1), maximum: .seconds(4), multiplier: 2, jitter: 0)
        let retry = Task {
            await journal.retryUntilCancelled(backoff: backoff, sleep: sleep.sleep)
            sleep.close()
        }
        var delays: [Duration] = []
        for _ in 0..<4 {
            let request = try #require(await sleeps.next())
            delays.append(request.delay)
            request.wake.resume()
        }
        let last = try #require(await sleeps.next())
        delays.append(last.delay)
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
        #expect(publisher.publishes.isEmpty)
        #expect(try Self.journalRows(store.database) == 1)

        publisher.fail(false)
        last.wake.resume()
        // With no failure left to retry, the loop sleeps no more and waits for the next one; ending the stream
        // ends it.
        sleep.close()
        journal.signalFailure.finish()
        await retry.value
        #expect(publisher.publishes.map(\.notification.messageID) == [entry.notification.messageID])
        #expect(try Self.journalRows(store.database) == 0)
        #expect(!journal.isBacklogged)
    }

    /// The node's stop cancels the retry: it ends while waiting, and the row stays journaled for the next start.
    @Test func theRetryEndsWhenCancelled() async throws {
        let store = try Self.makeStore()
        let publisher = RecordingPublisher()
        let journal = Self.journal(store, publisher)
        publisher.fail(true)
        let suspended = try Self.suspend(store)
        await journal.publish(suspended.notifications, log: journal.logger)
        let retry = Task { await journal.retryUntilCancelled() }
        retry.cancel()
        await retry.value
        #expect(try Self.journalRows(store.database) == 1)
        #expect(journal.isBacklogged)
    }

    /// Two changes racing after a failure both find the journal backlogged: one drain publishes the rows, oldest
    /// first, and neither publishes a row the other did.
    @Test func twoChangesAfterAFailurePublishEachRowOnce() async throws {
        let store = try Self.makeStore()
        let publisher = RecordingPublisher()
        let journal = Self.journal(store, publisher)
        publisher.fail(true)
        let suspended = try Self.change(store, .suspend, at: 1)
        await journal.publish(suspended.notifications, log: journal.logger)
        publisher.fail(false)
        let resumed = try Self.change(store, .resume, at: 2)
        let suspendedAgain = try Self.change(store, .suspend, at: 3)

        async let first: Void = journal.publish(resumed.notifications, log: journal.logger)
        async let second: Void = journal.publish(suspendedAgain.notifications, log: journal.logger)
        _ = await (first, second)

        let journaled = [suspended, resumed, suspendedAgain].flatMap(\.notifications).map(\.notification.messageID)
        #expect(journaled.count == 3)
        #expect(publisher.publishes.map(\.notification.messageID) == journaled)
        #expect(try Self.journalRows(store.database) == 0)
        #expect(!journal.isBacklogged)
    }
}
