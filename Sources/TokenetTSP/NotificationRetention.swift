/// How long the broker keeps messages nobody acknowledges, so a subscriber that never comes back cannot fill the
/// TSP's disk. Messages beyond either bound are dropped unacknowledged and counted (`expired_total`).
public struct NotificationRetention: Sendable, Equatable {
    /// Messages older than this (from publication) are dropped.
    public var maxAge: Duration
    /// At most this many messages wait in one queue; publishing more drops the oldest.
    public var maxQueued: Int
    /// At most this many bytes of messages (serialized) wait in one queue; publishing more drops the oldest. The
    /// broker holds its queues in memory: without this bound, one publisher of large messages (up to
    /// `NotificationBroker.maximumMessageBytes` each) to a subscriber that never reads could fill `maxQueued` of
    /// them, gigabytes, and take the TSP down.
    public var maxQueuedBytes: Int

    public init(
        maxAge: Duration = .seconds(7 * 24 * 3600), maxQueued: Int = 100_000, maxQueuedBytes: Int = 64 * 1024 * 1024
    ) {
        self.maxAge = maxAge
        self.maxQueued = max(1, maxQueued)
        self.maxQueuedBytes = max(1, maxQueuedBytes)
    }

    var maxAgeMs: UInt64 { maxAge.milliseconds }
}
