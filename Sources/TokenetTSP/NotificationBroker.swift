import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

/// The TSP's durable notification broker: one queue per subscriber, persisted in the TSP's database.
///
/// The protocol of each queue is `SubscriptionStateMachine`; this class is its driver. It keeps every queue's
/// machine under one lock, feeds it events (messages committed, a stream opened or gone, acknowledgements, expiry)
/// and carries out the actions: sending goes to the stream's `NotificationOutbox`, writes go to the next group
/// commit (`NotificationBroker+GroupCommit.swift`).
///
/// Durability: a publisher is answered, and a message handed to any stream, only after the transaction holding it
/// committed; an acknowledgement is answered only after the removal committed. Delivery progress (the watermark
/// and redelivery attempts) and expiry are written behind, with the next commit or within a second: losing them
/// in a crash costs at most an attempt counted once too few, never a message.
public final class NotificationBroker: NotificationPublishing, Sendable {
    /// The in-flight window of a Subscribe that asks for none, and the most a subscriber can ask for.
    public static let defaultWindow = 64
    public static let maximumWindow = 4096
    /// The most ids one Acknowledge may carry.
    public static let maximumAcknowledgeBatch = 10_000
    /// The largest message the broker accepts, serialized.
    public static let maximumMessageBytes = 64 * 1024

    struct Queue {
        var machine: SubscriptionStateMachine
        /// The last sequence handed out, committed or not: sequences follow the commit order of one writer.
        var allocated: UInt64
        var outbox: NotificationOutbox?
    }

    struct State {
        var queues: [String: Queue] = [:]
        var batch = NotificationWriteBatch()
        /// Callers waiting for the next commit (publishers, acknowledgers).
        var waiters: [CheckedContinuation<Void, any Error>] = []
        /// The commit thread is running or has been signalled.
        var committerAwake = false
        var nextStreamID: UInt64 = 0
        /// `shutDown()` was called: the commit thread stops and publishing fails.
        var stopped = false
    }

    let store: NotificationStore
    public let retention: NotificationRetention
    let logger: Logger
    /// One "notifications dropped by retention" line a second per queue: it came for every message published to a
    /// full queue (a wallet away for long under traffic wrote one per payment), with the count of those not shown.
    /// Per queue, so that one queue's drops never hide another's.
    let dropLines = KeyedLogThrottles()
    let nowMs: @Sendable () -> UInt64
    let state: Mutex<State>
    let wakeup = DispatchSemaphore(value: 0)
    /// Held while a batch is taken, committed and delivered.
    let committing = Mutex<Void>(())
    let recipientCache = Mutex<Set<String>>([])
    let idPrefix = NotificationBroker.randomLetters(12)
    let idCounter = Atomic<Int>(0)
    /// Transactions committed and messages they inserted, for the benchmark's batch sizes.
    let commits = Atomic<Int>(0)
    let committedMessages = Atomic<Int>(0)
    let commitNanoseconds = Atomic<Int>(0)

    /// Group commits so far, the messages they held (each counted once per recipient) and the time they took.
    public var commitFigures: (commits: Int, messages: Int, seconds: Double) {
        (
            commits.load(ordering: .relaxed), committedMessages.load(ordering: .relaxed),
            Double(commitNanoseconds.load(ordering: .relaxed)) / 1e9
        )
    }

    /// Opens the broker over `database` (migrated by the TSP's store) and restores every queue.
    public static func open(
        database: Database, retention: NotificationRetention = NotificationRetention(), logger: Logger,
        nowMs: @escaping @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }
    ) throws(TSPError) -> NotificationBroker {
        let store = NotificationStore(database: database)
        let stored: [StoredQueue]
        do {
            stored = try store.load()
        } catch {
            throw TSPError.internal("restoring the notification queues", error)
        }
        var state = State()
        for queue in stored {
            let machine = SubscriptionStateMachine(
                restoring: queue.messages, lastSequence: queue.counters.lastSequence,
                sentThrough: queue.counters.sentThrough, acknowledgedTotal: queue.counters.acknowledgedTotal,
                expiredTotal: queue.counters.expiredTotal)
            state.queues[queue.subscriber] = Queue(machine: machine, allocated: machine.lastSequence)
        }
        let broker = NotificationBroker(
            store: store, retention: retention, logger: logger, nowMs: nowMs, state: state)
        try broker.publishJournaledAtOpen()
        broker.startCommitter()
        let pending = stored.reduce(0) { $0 + $1.messages.count }
        if pending > 0 {
            logger.info("notification queues restored", ["queues": "\(stored.count)", "pending": "\(pending)"])
        }
        return broker
    }

    /// Opens the TSP's database at `path` (creating and migrating it) and a broker on it, for tools that need
    /// only the broker (the benchmark).
    public static func open(
        databasePath path: String, retention: NotificationRetention = NotificationRetention(), logger: Logger
    ) throws(TSPError) -> NotificationBroker {
        let database: Database
        do {
            database = try Database.open(path: path)
            try Migrator(TSPStore.migrations).migrate(database)
        } catch {
            throw TSPError.internal("opening \(path)", error)
        }
        return try open(database: database, retention: retention, logger: logger)
    }

    /// Serves the broker as `tsp.v1.Notifications` on `router`.
    public func register(on router: inout RPCRouter) {
        NotificationsService(broker: self, logger: logger).register(on: &router)
    }

    private init(
        store: NotificationStore, retention: NotificationRetention, logger: Logger,
        nowMs: @escaping @Sendable () -> UInt64, state: State
    ) {
        self.store = store
        self.retention = retention
        self.logger = logger
        self.nowMs = nowMs
        self.state = Mutex(state)
    }

    deinit {
        // Lets the commit thread see that the broker is gone and stop.
        wakeup.signal()
    }

    // MARK: Subscribing

    /// Opens `subscriber`'s queue on a new stream, replacing the open one; delivery restarts from the oldest
    /// unacknowledged message.
    func open(subscriber: String, window: Int) -> NotificationOutbox {
        state.withLock { state in
            state.nextStreamID += 1
            let outbox = NotificationOutbox(streamID: state.nextStreamID)
            let (previous, actions) = state.withQueue(subscriber, creating: true) { queue in
                defer { queue.outbox = outbox }
                return (queue.outbox, queue.machine.subscribed(stream: outbox.streamID, window: window))
            }!
            for case .end(let id, .replaced) in actions where previous?.streamID == id {
                previous?.replace()
            }
            state.perform(actions, on: subscriber)
            return outbox
        }
    }

    /// Stream `streamID` of `subscriber` is over; what it had in flight stays queued for the next stream.
    func close(subscriber: String, streamID: UInt64) {
        state.withLock { state in
            state.withQueue(subscriber) { queue in
                queue.machine.disconnected(stream: streamID)
                if queue.outbox?.streamID == streamID { queue.outbox = nil }
            }
        }
    }

    // MARK: Acknowledging

    /// Removes the acknowledged messages and answers once the removal is committed.
    func acknowledge(subscriber: String, ids: [String]) async throws(TSPError) -> (acknowledged: Int, unknown: Int) {
        var counts = (acknowledged: 0, unknown: ids.count)
        try await waitForCommit { state in
            guard let result = state.withQueue(subscriber, { $0.machine.acknowledged(ids) }) else { return }
            state.perform(result.actions, on: subscriber)
            counts = (result.acknowledged, result.unknown)
        }
        return counts
    }

    // MARK: Stopping

    /// Commits what is pending and stops the commit thread; later publishes and acknowledgements fail. For a
    /// TSP that closes its database while the process goes on (tests restarting a node in process).
    public func shutDown() {
        // Stopped first, then the last batch: a publish or acknowledgement that came between the two was left with
        // its writes in a batch nobody took, and its caller waited for good.
        state.withLock { $0.stopped = true }
        commitPending(flushWrittenBehind: true)
        wakeup.signal()
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    // MARK: Waiting for a commit

    /// Runs `change` under the lock, then waits until the commit that holds its writes is durable.
    func waitForCommit(_ change: (inout State) -> Void) async throws(TSPError) {
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let wake = state.withLock { state -> Bool? in
                    guard !state.stopped else { return nil }
                    change(&state)
                    state.waiters.append(continuation)
                    guard !state.committerAwake else { return false }
                    state.committerAwake = true
                    return true
                }
                switch wake {
                case nil: continuation.resume(throwing: Self.stoppedError)
                case true?: wakeup.signal()
                case false?: break
                }
            }
        } catch let error as TSPError where error.code == .unavailable {
            throw error
        } catch {
            throw TSPError.internal("storing notifications", error)
        }
    }

    /// What a publish or acknowledgement that comes once the broker has stopped is told: the TSP is stopping, and
    /// the caller tries again once it is back.
    static let stoppedError = TSPError(
        .unavailable, "the TSP is stopping: its notification broker takes no more publishes or acknowledgements")
}

extension NotificationBroker.State {
    /// Runs `body` on `subscriber`'s queue in place (a copy would duplicate its tables on every change); nil when
    /// the queue does not exist and `creating` is false.
    @discardableResult
    mutating func withQueue<T>(
        _ subscriber: String, creating: Bool = false, _ body: (inout NotificationBroker.Queue) -> T
    ) -> T? {
        if queues[subscriber] == nil {
            guard creating else { return nil }
            queues[subscriber] = NotificationBroker.Queue(machine: SubscriptionStateMachine(), allocated: 0)
        }
        return body(&queues[subscriber]!)
    }

    /// Records `subscriber`'s current totals for the next commit.
    mutating func touch(_ subscriber: String) {
        guard let queue = queues[subscriber] else { return }
        batch.counters[subscriber] = .init(
            lastSequence: queue.allocated, sentThrough: queue.machine.sentThrough,
            acknowledgedTotal: queue.machine.acknowledgedTotal, expiredTotal: queue.machine.expiredTotal)
    }

    /// Carries out a machine's actions for `subscriber`: sends to its stream, writes to the next commit.
    mutating func perform(_ actions: [SubscriptionStateMachine.Action], on subscriber: String) {
        for action in actions {
            switch action {
            case .send(let stream, let notifications):
                if let outbox = queues[subscriber]?.outbox, outbox.streamID == stream {
                    outbox.push(notifications)
                }
            case .end:
                break  // handled where a stream is opened, the only event that ends one
            case .recordDeliveries(_, let redelivered):
                if !redelivered.isEmpty { batch.attempts[subscriber, default: []] += redelivered }
                touch(subscriber)
            case .delete(let sequences):
                batch.deletes[subscriber, default: []] += sequences
                touch(subscriber)
            }
        }
    }

    /// Applies retention to one queue; the number of messages dropped, nil when none.
    mutating func expire(_ subscriber: String, nowMs: UInt64, retention: NotificationRetention) -> Int? {
        guard
            let (before, actions) = withQueue(
                subscriber,
                { queue in
                    (queue.machine.expiredTotal, queue.machine.expire(nowMs: nowMs, retention: retention))
                }), !actions.isEmpty
        else { return nil }
        perform(actions, on: subscriber)
        return Int((queues[subscriber]?.machine.expiredTotal ?? before) - before)
    }
}
