import TokenetWire

/// The broker's side of the TSP's notification journal: a journaled message is stored under the id it was
/// journaled with, and its journal row removed, in one group commit; rows a crash left are published at open.
extension NotificationBroker {
    public func publish(journaled entry: JournaledNotification) async throws(TSPError) -> Bool {
        let recipients = try validRecipients(entry.subscribers)
        var message = entry.notification
        guard !message.messageID.isEmpty else {
            throw TSPError(.invalidArgument, "a journaled notification needs the message id it was journaled with")
        }
        let bytes = try prepare(&message)
        try await waitForCommit { state in
            state.enqueue(message, bytes: bytes, for: recipients, journalID: entry.journalID)
        }
        return true
    }

    /// Publishes what the journal still holds (changes committed by a TSP stopped before the broker stored their
    /// notifications) in one commit, before the commit thread starts and before anyone subscribes. A row that can
    /// never be published (refused as a publish would refuse it) is removed and logged rather than kept forever.
    func publishJournaledAtOpen() throws(TSPError) {
        let entries: [JournaledNotification]
        do {
            entries = try store.journaled()
        } catch {
            throw TSPError.internal("reading the notification journal", error)
        }
        guard !entries.isEmpty else { return }
        var refused: [(JournaledNotification, TSPError)] = []
        for entry in entries {
            do throws(TSPError) {
                let recipients = try validRecipients(entry.subscribers)
                var message = entry.notification
                let bytes = try prepare(&message)
                state.withLock { state in
                    state.enqueue(message, bytes: bytes, for: recipients, journalID: entry.journalID)
                }
            } catch {
                refused.append((entry, error))
                state.withLock { $0.batch.journalDeletes.append(entry.journalID) }
            }
        }
        for (entry, error) in refused {
            logger.error(
                "journaled notification cannot be published; removed",
                [
                    "message_id": entry.notification.messageID, "type": entry.notification.messageType,
                    "error": error.message,
                ])
        }
        commitPending(flushWrittenBehind: true)
        // A commit that failed here (the disk full, the file locked past the busy timeout) leaves the rows in the
        // journal, and nothing would publish them before the next change's messages overtook them (a RESUME ahead
        // of the SUSPENDED it follows): the start stops instead, with the cause logged by the commit.
        let left: Int
        do {
            left = try store.journaled().count
        } catch {
            throw TSPError.internal("reading the notification journal", error)
        }
        guard left == 0 else {
            throw TSPError(
                .unavailable,
                "\(left) journaled notification(s) could not be stored for delivery at start (the error above says "
                    + "why); they stay journaled: mend the cause and start the node again")
        }
        logger.info("journaled notifications published at start", ["count": "\(entries.count - refused.count)"])
    }
}
