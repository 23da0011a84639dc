/// How long the broker keeps messages nobody acknowledges, so a subscriber that never comes back cannot fill the
/// TSP's disk. Messages beyond either bound are dropped unacknowledged and counted (`expired_total`).
public struct NotificationRetention: Sendable, Equatable {
    /// Messages older than this (from publication) are dropped.
    public var maxAge: Duration
    /// At most this many messages wait in one queue; publishing more drops the oldest.
    public var maxQueued: Int

    public init(maxAge: Duration = .seconds(7 * 24 * 3600), maxQueued: Int = 100_000) {
        self.maxAge = maxAge
        self.maxQueued = max(1, maxQueued)
    }

    var maxAgeMs: UInt64 { maxAge.milliseconds }
}
