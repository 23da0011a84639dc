import TokenetWire

/// The broker's entry for the TSP's own components (CPS, MG, TNS) and for issuers' messages to their users.
///
/// Publishing returns only once the message is persisted in the queue of every recipient, so a publisher that got
/// an answer knows the message will be delivered even if the TSP is killed right after.
public protocol NotificationPublishing: Sendable {
    /// Persists `notification` for each subscriber named in `subscribers` ("ROLE/NODE_ID", e.g. "wallet/wallet-1")
    /// in one transaction and wakes their streams. The caller fills sender, topic, message type, card id, last call
    /// timestamp and body; the broker fills the message id, sequence, publication time and delivery attempt.
    /// Returns the message id.
    @discardableResult
    func publish(_ notification: TspV1.Notification, to subscribers: [String]) async throws(TSPError) -> String

    /// Publishes a message the TSP journaled with the change it reports (`TSPStore+Journal.swift`), keeping the
    /// message id it was journaled with. Returns true when the journal row was removed in the transaction that
    /// stored the message (the broker, which shares the TSP's database); false leaves the removal to the caller.
    func publish(journaled entry: JournaledNotification) async throws(TSPError) -> Bool
}

extension NotificationPublishing {
    /// A publisher outside the TSP's database publishes the message; the TSP then removes the journal row.
    public func publish(journaled entry: JournaledNotification) async throws(TSPError) -> Bool {
        _ = try await publish(entry.notification, to: entry.subscribers)
        return false
    }
}
