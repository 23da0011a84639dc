import Foundation
import Synchronization
import TokenetRPC
import TokenetWire

/// A node's subscription to the TSP's notification broker: it holds the Subscribe stream open, reconnecting with
/// backoff, hands each message to the node's `NotificationHandler` once per message id and in queue order, and
/// acknowledges it after the handler returned.
///
/// Once per id: a redelivered message (after a reconnect, or after this node restarted between handling and
/// acknowledging) whose id is in the `ProcessedNotificationLog` is acknowledged again without being handled.
/// Acknowledgements are batched: while one is on its way, the ids handled meanwhile gather for the next, and a few
/// travel at once, so the broker's window keeps moving while its commits are being synced.
public final class NotificationSubscriber: Sendable {
    public struct Options: Sendable {
        /// The in-flight window asked of the broker.
        public var maxInFlight: UInt32
        /// The most ids in one Acknowledge.
        public var acknowledgeBatch: Int
        /// Acknowledge calls on their way at once.
        public var concurrentAcknowledgements: Int
        public var backoff: RPCChannel.Backoff
        /// How long one Acknowledge may take before its ids are left for redelivery.
        public var acknowledgeTimeout: Duration
        /// A stream that stayed up this long was open, though the broker had nothing to send on it: when it fails
        /// (the TSP restarted, say), the next Subscribe goes after the initial delay and the failure is a warning,
        /// as after a stream that carried messages. A refused Subscribe fails within milliseconds.
        public var openAfter: Duration
        /// Called with the ids of each acknowledgement the broker confirmed (for measurements).
        public var onAcknowledged: (@Sendable ([String]) -> Void)?
        /// This node's instance (`NodeInstance`), sent with each Subscribe: the broker refuses another instance of
        /// the same identity while this one holds the stream. Empty: the stream replaces any open one.
        public var instanceID: String
        /// Awaited before the first Subscribe: an issuer node subscribes once its registration with the TSP has
        /// succeeded, since a node refused (another node holds its issuer id) would otherwise take the messages of
        /// its node id's queue away from the issuer they are for. Returns at once when cancelled.
        public var beforeSubscribing: (@Sendable () async -> Void)?
        /// Whether the node is still starting (`NodeOutgoing.isStarting`): a TSP not up yet is then said at info
        /// level, and the warning waits for a failure after the start.
        public var isStarting: @Sendable () -> Bool = { false }

        public init(
            maxInFlight: UInt32 = 256, acknowledgeBatch: Int = 1024, concurrentAcknowledgements: Int = 4,
            backoff: RPCChannel.Backoff = RPCChannel.Backoff(initial: .milliseconds(200), maximum: .seconds(10)),
            acknowledgeTimeout: Duration = .seconds(10), openAfter: Duration = .seconds(2),
            onAcknowledged: (@Sendable ([String]) -> Void)? = nil, instanceID: String = ""
        ) {
            self.instanceID = instanceID
            self.maxInFlight = maxInFlight
            self.acknowledgeBatch = max(1, acknowledgeBatch)
            self.concurrentAcknowledgements = max(1, concurrentAcknowledgements)
            self.backoff = backoff
            self.acknowledgeTimeout = acknowledgeTimeout
            self.openAfter = openAfter
            self.onAcknowledged = onAcknowledged
        }
    }

    let client: TspV1.Notifications.Client
    let handler: any NotificationHandler
    public let processed: ProcessedNotificationLog
    let logger: Logger
    let options: Options
    let sleep: @Sendable (Duration) async throws -> Void
    /// Handled ids whose acknowledgement failed when their stream was already over: the next stream acknowledges
    /// them first. The broker may have removed them already (the answer was lost, not the request); acknowledging
    /// an unknown id is harmless, and it lets the journal forget them.
    private let unconfirmed = Mutex<[String]>([])
    /// Acknowledgements that failed in a row, across the workers: the wait before the next attempt grows with it,
    /// and only the first of a run is a warning. A TSP whose disk was full drew one line, and one retry, every
    /// initial backoff from each worker for as long as the disk stayed full.
    private let acknowledgementFailures = Mutex(0)
    /// Whether the failures since the stream was last open were said at warning level: those while the node starts
    /// are said at info, and the first failure after the start is then the warning.
    private let warnedOfFailure = Atomic<Bool>(false)

    public init(
        tsp: any RPCCaller, handler: any NotificationHandler, processed: ProcessedNotificationLog, logger: Logger,
        options: Options = Options(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.client = TspV1.Notifications.Client(tsp)
        self.handler = handler
        self.processed = processed
        self.logger = logger
        self.options = options
        self.sleep = sleep
    }

    /// Subscribes until the task is cancelled. Only the first failure in a row is a warning, so a TSP that is down
    /// for a while does not fill the log with one line per retry. A message whose handling keeps failing counts as
    /// such a failure too: the waits before it is delivered again grow up to the backoff's maximum, instead of the
    /// stream being reopened every initial delay for as long as the failure lasts.
    public func run() async {
        await options.beforeSubscribing?()
        var failures = 0
        while !Task.isCancelled {
            let outcome = await subscribeOnce(quiet: failures > 0)
            failures = outcome == .ended ? 1 : failures + 1
            do { try await sleep(options.backoff.delay(beforeAttempt: failures)) } catch { return }
        }
    }

    enum Outcome: Equatable {
        case failedToOpen
        /// The stream was open and then ended or failed.
        case ended
        /// The handler failed on a message, which the next stream delivers again.
        case handlerFailed
    }

    /// One stream: handle and acknowledge until it ends; returns once its acknowledgements are settled, so a new
    /// stream never races an acknowledgement of the old one.
    func subscribeOnce(quiet: Bool = false) async -> Outcome {
        let acknowledgements = AcknowledgementQueue(batch: options.acknowledgeBatch)
        var opened = false
        var received = 0
        var handlerFailed = false
        var subscribedAt: ContinuousClock.Instant?
        /// Whether the stream was open: it carried a message, or it stayed up `openAfter`.
        func wasOpen() -> Bool {
            opened || subscribedAt.map { ContinuousClock.now - $0 >= options.openAfter } == true
        }
        // Every id handled before this stream. The broker sends the unacknowledged ones again on it, and this
        // stream's first acknowledgement (of the same ids) can be confirmed, and the journal forget them, before
        // their copies are read: the copies are recognised by this set, which lives as long as the stream (the
        // broker never sends an id again after confirming it, except for copies already on their way).
        let handledBefore = Set(processed.ids).union(unconfirmed.withLock { $0 })
        let announcement = Announcement()
        do {
            let stream = try await client.subscribe(
                TspV1.SubscribeRequest(maxInFlight: options.maxInFlight, instanceID: options.instanceID))
            subscribedAt = .now
            warnedOfFailure.store(false, ordering: .relaxed)
            // A quiet queue sends nothing: the stream is announced once it has stayed up `openAfter`, so that an
            // operator reading the log sees the node subscribed without waiting for the first message.
            let announcer = Task { [openAfter = options.openAfter] in
                try await Task.sleep(for: openAfter)
                announce(announcement)
            }
            defer { announcer.cancel() }
            acknowledgementFailures.withLock { $0 = 0 }
            for id in unsettled() { acknowledgements.add(id) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<options.concurrentAcknowledgements {
                    group.addTask { await self.acknowledge(from: acknowledgements) }
                }
                defer { acknowledgements.finish() }
                for try await notification in stream {
                    if !opened {
                        opened = true
                        announce(announcement)
                    }
                    received += 1
                    do {
                        try await process(notification, handledBefore: handledBefore)
                    } catch {
                        handlerFailed = true
                        throw error
                    }
                    acknowledgements.add(notification.messageID, traceID: notification.traceID)
                }
            }
            if Task.isCancelled {
                // A cancelled stream can end without an error.
                logger.debug("notification stream to the TSP closed: the node is stopping")
            } else {
                logger.info("the TSP ended the notification stream", ["received": "\(received)"])
            }
        } catch {
            acknowledgements.finish()
            if Task.isCancelled {
                logger.debug("notification stream to the TSP closed: the node is stopping")
            } else if (error as? RPCError)?.isStreamEndedByShutdown == true {
                // The TSP is stopping, cleanly: a warning that the stream "failed" with "the node is shutting
                // down" read as if this node were.
                logger.info("the TSP is stopping; the notification stream is opened again when it is back")
            } else if !wasOpen(), options.isStarting(), (error as? RPCError)?.mayBeAPeerStillStarting == true {
                // A TSP not up yet while this node starts (parties started together): once, at info.
                if quiet {
                    logger.debug("notification stream to the TSP failed again", ["error": "\(error)"])
                } else {
                    logger.info(
                        "the TSP's notifications cannot be subscribed to yet (it may still be starting); trying again",
                        ["error": "\(error)"])
                }
            } else if wasOpen() || !quiet || !warnedOfFailure.load(ordering: .relaxed) {
                warnedOfFailure.store(true, ordering: .relaxed)
                logger.warning("notification stream to the TSP failed", ["error": "\(error)"])
            } else {
                logger.debug("notification stream to the TSP failed again", ["error": "\(error)"])
            }
        }
        if handlerFailed { return .handlerFailed }
        return wasOpen() || received > 0 ? .ended : .failedToOpen
    }

    /// Says "subscribed", and tells the handler, once per stream.
    private func announce(_ announcement: Announcement) {
        guard announcement.isFirst() else { return }
        logger.info("subscribed to the TSP's notifications")
        handler.streamOpened()
    }

    /// Says "subscribed" once per stream, whichever comes first: its first message or `openAfter` of quiet.
    private final class Announcement: Sendable {
        private let done = Atomic<Bool>(false)

        func isFirst() -> Bool { !done.exchange(true, ordering: .relaxed) }
    }

    /// What a new stream acknowledges first: every id the journal still holds, and the unconfirmed ids it could
    /// not record. All were handled; some the broker may have removed already, when an acknowledgement reached
    /// it but its answer did not reach this node before the stream ended or the node stopped. The broker never
    /// sends those again, so only acknowledging them again (harmless: unknown ids are counted) lets the journal
    /// forget them; without it they stayed in the journal for good, a few more at every stop.
    private func unsettled() -> [String] {
        let left = unconfirmed.withLock { ids in
            defer { ids = [] }
            return ids
        }
        let journaled = processed.ids
        let known = Set(journaled)
        return journaled + left.filter { !known.contains($0) }
    }

    /// Hands `notification` to the handler unless its id was handled before (the journal holds it, or it was
    /// handled before this stream opened), and records it as handled.
    func process(_ notification: TspV1.Notification, handledBefore: Set<String>) async throws {
        let id = notification.messageID
        guard !processed.contains(id), !handledBefore.contains(id) else {
            logger.debug(
                "notification already handled; acknowledging it again",
                ["message_id": id, "attempt": "\(notification.deliveryAttempt)"])
            return
        }
        // Sequences go up by one per message in the queue: ones missing past the highest handled were dropped by the
        // broker's retention (the node was away, or fell behind, too long). The messages are gone; what they said
        // (a transaction, an issuer's message) is not resent, so the operator hears of it here.
        let highest = processed.highestSequence
        // Compared without adding to `highest`: a TSP that sent the largest sequence there is (none of Tokenet's
        // reaches it) left it in the journal, and the node trapped on the next message after every restart.
        if highest > 0, notification.sequence > highest, notification.sequence - highest > 1 {
            let (first, last) = (highest + 1, notification.sequence - 1)
            logger.warning(
                "notifications lost: \(last - first + 1) message(s) of this node's queue at the TSP never came (dropped "
                    + "by the broker's retention, too old or too many queued, or not stored by a write that failed "
                    + "there); token states are checked with the TSP, other messages (transactions, issuer "
                    + "messages) are not sent again",
                ["sequences": first == last ? "\(first)" : "\(first)-\(last)", "next_message_id": id])
        }
        // Under the trace of the flow that made it: the lines the handling logs, and the calls it makes, carry it.
        try await FlowTrace.run(notification.traceID) {
            do {
                try await handler.handle(notification)
            } catch {
                logger.warning(
                    "notification not handled; reopening the stream so that it is delivered again",
                    ["message_id": id, "attempt": "\(notification.deliveryAttempt)", "error": "\(error)"])
                throw error
            }
        }
        do {
            try processed.record(id, sequence: notification.sequence)
        } catch {
            // Handled, and not handled again while the node runs (the id is kept in memory); but the journal is what
            // keeps a restart from handling it twice, and a full disk is the operator's to free.
            let directory = (processed.path as NSString).deletingLastPathComponent
            let hint =
                DiskSpace.fullDiskNote(
                    dataDirectory: directory, then: "and the node records it when the message comes again")
                ?? "the message was handled; a restart before the file can be written may handle it again"
            logger.error("cannot record a handled notification", ["message_id": id, "error": "\(error)", "hint": hint])
            throw error
        }
    }

    /// One acknowledgement worker: syncs the journal, acknowledges a batch, forgets it once confirmed.
    private func acknowledge(from queue: AcknowledgementQueue) async {
        while let batch = await queue.take() {
            defer { queue.done() }
            let ids = batch.map(\.id)
            do {
                try processed.sync()
                // Under the trace of the flow whose messages these are, when they are one flow's.
                try await FlowTrace.run(AcknowledgementQueue.sharedTrace(of: batch)) {
                    _ = try await client.acknowledge(
                        TspV1.AcknowledgeRequest(messageIds: ids),
                        options: CallOptions(timeout: options.acknowledgeTimeout))
                }
                processed.forget(ids)
                options.onAcknowledged?(ids)
                let failedBefore = acknowledgementFailures.withLock { failures in
                    defer { failures = 0 }
                    return failures
                }
                if failedBefore > 0 {
                    logger.info("acknowledging notifications works again", ["failed_attempts": "\(failedBefore)"])
                }
            } catch {
                if Task.isCancelled {
                    // The node is stopping: the next start acknowledges them (the broker sends them again, and the
                    // journal knows them).
                    return
                }
                // Unacknowledged, the broker sends them again and the journal makes sure they are not handled twice;
                // acknowledged but unconfirmed, only another acknowledgement lets the journal forget them. Either
                // way they are acknowledged again: after a pause on this stream, or first thing on the next one.
                let failures = acknowledgementFailures.withLock { failures in
                    failures += 1
                    return failures
                }
                if failures == 1 {
                    logger.warning(
                        "acknowledging notifications failed; trying again with growing waits",
                        ["count": "\(ids.count)", "error": "\(error)"])
                } else {
                    logger.debug(
                        "acknowledging notifications failed again",
                        ["count": "\(ids.count)", "attempt": "\(failures)", "error": "\(error)"])
                }
                let delay = options.backoff.delay(beforeAttempt: failures)
                await queue.pause { [sleep] in try await sleep(delay) }
                if !queue.retry(batch) { unconfirmed.withLock { $0.append(contentsOf: ids) } }
            }
        }
    }
}
