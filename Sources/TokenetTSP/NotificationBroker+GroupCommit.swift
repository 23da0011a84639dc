import Foundation
import TokenetNode
import TokenetStorage
import TokenetTransport
import TokenetWire

/// Group commit: one thread writes everything that accumulated while the previous transaction was being committed,
/// so the cost of an fsync (`synchronous=FULL`) is shared by every publish and acknowledgement that arrived in the
/// meantime. Publishers and acknowledgers wait for the commit that holds their writes; delivery progress and expiry
/// ride along with the next commit, or are flushed by the thread's one-second tick.
///
/// The thread blocks on SQLite rather than a task of the cooperative pool, which has one thread per core here.
extension NotificationBroker {
    private struct WeakBroker: @unchecked Sendable {
        weak var broker: NotificationBroker?
    }

    func startCommitter() {
        let weak = WeakBroker(broker: self)
        let wakeup = self.wakeup
        NamedThread.start("tokenet-notification-commit") {
            // The tick is kept by the clock, not by a wait that ran out: every publish and acknowledgement wakes the
            // thread, and a TSP that got one a second never dropped a message for its age.
            var nextTick = DispatchTime.now() + .seconds(1)
            while true {
                _ = wakeup.wait(timeout: nextTick)
                guard let broker = weak.broker, !broker.isStopped else { return }
                let ticks = DispatchTime.now() >= nextTick
                if ticks {
                    broker.expireNow()
                    nextTick = DispatchTime.now() + .seconds(1)
                }
                broker.commitPending(flushWrittenBehind: ticks)
            }
        }
    }

    /// Commits batches until there is nothing that someone waits for. One caller at a time (the commit thread, or
    /// `shutDown`): batches must be committed and delivered in the order they were taken, or a queue's machine
    /// would see sequences out of order.
    func commitPending(flushWrittenBehind: Bool) {
        committing.withLock { _ in commitInOrder(flushWrittenBehind: flushWrittenBehind) }
    }

    private func commitInOrder(flushWrittenBehind: Bool) {
        var flush = flushWrittenBehind
        while true {
            let taken = state.withLock { state -> (NotificationWriteBatch, [CheckedContinuation<Void, any Error>])? in
                let urgent = !state.waiters.isEmpty || !state.batch.inserts.isEmpty
                guard urgent || (flush && !state.batch.isEmpty) else {
                    state.committerAwake = false
                    return nil
                }
                defer {
                    state.batch = NotificationWriteBatch()
                    state.waiters = []
                }
                return (state.batch, state.waiters)
            }
            flush = false
            guard let (batch, waiters) = taken else { return }
            do {
                if !batch.isEmpty {
                    let started = DispatchTime.now().uptimeNanoseconds
                    try store.commit(batch)
                    let took = DispatchTime.now().uptimeNanoseconds - started
                    commitNanoseconds.wrappingAdd(Int(took), ordering: .relaxed)
                    commits.wrappingAdd(1, ordering: .relaxed)
                    committedMessages.wrappingAdd(batch.inserts.count, ordering: .relaxed)
                }
            } catch {
                fail(batch, waiters, error)
                // A broken database must not turn this thread into a busy loop.
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            deliver(batch.inserts)
            for waiter in waiters { waiter.resume() }
        }
    }

    /// A commit failed: its publishers get the error; removals, attempts and totals are kept for the next commit.
    /// The journal rows of its messages stay, so a message that was journaled is published again at the next start.
    private func fail(
        _ batch: NotificationWriteBatch, _ waiters: [CheckedContinuation<Void, any Error>], _ error: any Error
    ) {
        if let refused = error as? StorageError, refused.message.contains(NodeContext.stoppingRefusal) {
            // The node stops: what the batch holds is kept for the broker's last flush (`shutDown`), no fault.
            logger.info("notification commit left to the last flush: the node is stopping")
        } else {
            logger.error("notification commit failed", ["error": "\(error)", "messages": "\(batch.inserts.count)"])
        }
        state.withLock { state in
            var retry = batch
            retry.inserts = []
            retry.journalDeletes = []
            retry.merge(state.batch)
            state.batch = retry
        }
        // A StorageError is passed on as it is, so a full disk reaches the publishers as one (`TSPError.internal`).
        let cause: any Error & Sendable = (error as? StorageError) ?? Described(error)
        for waiter in waiters { waiter.resume(throwing: cause) }
    }

    /// Hands committed messages to their queues' machines, which send what the windows allow.
    private func deliver(_ inserts: [NotificationWriteBatch.Insert]) {
        guard !inserts.isEmpty else { return }
        var order: [String] = []
        var grouped: [String: [(notification: TspV1.Notification, size: Int)]] = [:]
        for insert in inserts {
            if grouped[insert.subscriber] == nil { order.append(insert.subscriber) }
            grouped[insert.subscriber, default: []].append((insert.notification, insert.bytes.count))
        }
        let now = nowMs()
        let retention = self.retention
        let expired = state.withLock { state -> [(String, Int)] in
            var expired: [(String, Int)] = []
            for name in order {
                guard let list = grouped[name], let actions = state.withQueue(name, { $0.machine.published(list) })
                else { continue }
                state.perform(actions, on: name)
                if state.queues[name]?.machine.exceeds(retention) == true,
                    let count = state.expire(name, nowMs: now, retention: retention)
                {
                    expired.append((name, count))
                }
            }
            return expired
        }
        for (name, count) in expired { logDropped(count, of: name) }
    }
}
