import Synchronization

/// Notices one identity subscribing from two places at once: two nodes started with the same certificate (a copied
/// wallet data directory, a second wallet-node on the same PKI files). Each Subscribe replaces the other's stream, a
/// second later the other reconnects and replaces it back, and the queue's messages land in whichever node holds
/// the stream at the time. A replacement alone is normal (a node that reconnected before the TSP saw its old
/// connection end); several within a minute are not, and are worth a warning that says what to do.
///
/// Pure: the service feeds it each replacement with its time and logs what it returns.
struct SubscriberContention {
    /// Replacements of one subscriber's stream within `window` that make a warning.
    static let threshold = 3
    /// How far back replacements count, in milliseconds; also the least time between two warnings.
    static let windowMs: UInt64 = 60_000

    private var replacements: [String: [UInt64]] = [:]
    private var warnedAtMs: [String: UInt64] = [:]

    /// What to do after a replacement of `subscriber`'s stream.
    enum Action: Equatable {
        case none
        /// Warn that `subscriber`'s stream was replaced `count` times within the window.
        case warn(subscriber: String, count: Int)
    }

    /// One table for every call of a service (a struct, copied into each handler).
    final class Shared: Sendable {
        let state = Mutex(SubscriberContention())
    }

    mutating func replaced(_ subscriber: String, atMs now: UInt64) -> Action {
        var times = (replacements[subscriber] ?? []).filter { $0 + Self.windowMs > now }
        times.append(now)
        replacements[subscriber] = times
        // Subscribers that stopped being replaced are forgotten, so the table stays as small as the contention.
        replacements = replacements.filter { $0.value.contains { $0 + Self.windowMs > now } }
        guard times.count >= Self.threshold else { return .none }
        if let warned = warnedAtMs[subscriber], warned + Self.windowMs > now { return .none }
        warnedAtMs[subscriber] = now
        return .warn(subscriber: subscriber, count: times.count)
    }
}
