import Synchronization
import TokenetNode

/// Publishes the notifications the TSP's changes journaled (`TSPStore.journaling`). A message the broker could not
/// take stays journaled and marks the journal backlogged: from then on every publication drains the journal, oldest
/// first, so no later change overtakes it, and the retry loop (`NotificationJournal+Retry.swift`) drains it too when
/// no change comes.
///
/// Each row is published by one caller only: a caller claims the rows it publishes, and drains run one at a time, so
/// two changes racing after a failure do not both queue the same row (receivers would skip the repeat by its id, but
/// the broker's queue would hold it twice).
final class NotificationJournal: Sendable {
    struct State {
        /// A journaled message could not be published: publications drain the whole journal.
        var backlog = false
        /// Counts failures, so a drain clears `backlog` only when nothing failed while it ran.
        var failures = 0
        /// Rows a caller is publishing: nobody else publishes them meanwhile.
        var claimed: Set<Int64> = []
        /// Drains begun since start. While none has, no other caller can have published a change's rows, so the
        /// change skips the journal lookup (`publishClaimed`): the healthy path costs no extra query.
        var drainsStarted = 0
    }

    let store: TSPStore
    let notifications: any NotificationPublishing
    let logger: Logger
    let state = Mutex(State())
    /// One drain at a time, in arrival order.
    let drains = StateChangeGate()
    /// Wakes the retry loop after a failure.
    let failed: AsyncStream<Void>
    let signalFailure: AsyncStream<Void>.Continuation

    init(store: TSPStore, notifications: any NotificationPublishing, logger: Logger) {
        self.store = store
        self.notifications = notifications
        self.logger = logger
        (failed, signalFailure) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var isBacklogged: Bool { state.withLock { $0.backlog } }

    /// Publishes a change's journaled `entries` in order; when the journal is backlogged, the whole journal instead
    /// (the change's rows are in it), after the rows left before them.
    func publish(_ entries: [JournaledNotification], log: Logger) async {
        let claimed = state.withLock { state -> (entries: [JournaledNotification], check: Bool)? in
            guard !state.backlog else { return nil }
            return (Self.claim(entries, in: &state), state.drainsStarted > 0)
        }
        if let claimed {
            await publishClaimed(claimed.entries, checkJournal: claimed.check, log: log)
            release(claimed.entries)
        } else {
            await drain(log: log)
        }
    }

    /// Publishes the journal's rows oldest first, stopping at the first the broker cannot take; true when all went.
    /// Rows another caller is publishing are left to it.
    @discardableResult
    func drain(log: Logger) async -> Bool {
        (try? await drains.run { await drainAlone(log: log) }) ?? false
    }

    private func drainAlone(log: Logger) async -> Bool {
        let failuresBefore = state.withLock { state in
            state.drainsStarted += 1
            return state.failures
        }
        let rows: [JournaledNotification]
        do {
            rows = try NotificationStore(database: store.database).journaled()
        } catch {
            log.error("the notification journal cannot be read", ["error": String(describing: error)])
            return false
        }
        let claimed = state.withLock { Self.claim(rows, in: &$0) }
        defer { release(claimed) }
        guard await publishClaimed(claimed, checkJournal: true, log: log) else { return false }
        // A failure of another caller while this drain ran keeps the journal backlogged.
        state.withLock { state in
            if state.failures == failuresBefore { state.backlog = false }
        }
        return true
    }

    /// The entries no other caller is publishing, now claimed.
    private static func claim(_ entries: [JournaledNotification], in state: inout State) -> [JournaledNotification] {
        entries.filter { state.claimed.insert($0.journalID).inserted }
    }

    private func release(_ entries: [JournaledNotification]) {
        state.withLock { state in
            for entry in entries { state.claimed.remove(entry.journalID) }
        }
    }

    /// Publishes claimed entries in order until one fails; false when one failed. With `checkJournal`, an entry no
    /// longer journaled was published by another caller before this one claimed it (a drain took a change's rows,
    /// or a change published rows a drain had read), and is skipped.
    @discardableResult
    private func publishClaimed(_ entries: [JournaledNotification], checkJournal: Bool, log: Logger) async -> Bool {
        guard !entries.isEmpty else { return true }
        var pending = entries
        if checkJournal {
            do {
                let journaled = try store.journaledIDs(among: entries.map(\.journalID))
                pending = entries.filter { journaled.contains($0.journalID) }
            } catch {
                // Publishing again at worst repeats a message receivers skip by its id; not publishing could lose it.
                log.error("the notification journal cannot be read", ["error": String(describing: error)])
            }
        }
        for entry in pending where await !publish(entry, log: log) {
            // What follows would overtake it: it waits in the journal too.
            state.withLock { state in
                state.backlog = true
                state.failures += 1
            }
            signalFailure.yield()
            return false
        }
        return true
    }

    /// Publishes one journaled message; false when it stays journaled.
    private func publish(_ entry: JournaledNotification, log: Logger) async -> Bool {
        let notification = entry.notification
        // Its own flow's trace, also when a later change or a drain publishes it.
        let log = notification.traceID.isEmpty ? log : log.withTraceID(notification.traceID)
        do throws(TSPError) {
            if try await !notifications.publish(journaled: entry) {
                try forget(entry)
            }
            log.info(
                "notification published",
                [
                    "type": notification.messageType, "sender": notification.sender,
                    "digital_card_id": notification.cardID, "to": entry.subscribers.joined(separator: ","),
                    "message_id": notification.messageID,
                ])
            return true
        } catch  where error.code == .invalidArgument {
            // Refused for what it is: publishing it again at the next start would be refused the same way.
            log.error(
                "notification refused by the broker; removed from the journal",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": error.message,
                ])
            try? forget(entry)
            return true
        } catch {
            log.error(
                "notification could not be published; it stays journaled and goes out before the next ones",
                [
                    "type": notification.messageType, "digital_card_id": notification.cardID,
                    "message_id": notification.messageID, "error": String(describing: error),
                ])
            return false
        }
    }

    private func forget(_ entry: JournaledNotification) throws(TSPError) {
        do {
            try store.forgetJournaled([entry.journalID])
        } catch {
            throw TSPError.internal("removing a published notification from the journal", error)
        }
    }
}
