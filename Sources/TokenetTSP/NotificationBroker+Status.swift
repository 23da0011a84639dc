import Foundation
import TokenetNode

/// Queue figures for operators and tests, and retention.
extension NotificationBroker {
    public struct QueueFigures: Sendable, Equatable {
        public var subscriber: String
        public var pending: Int
        public var inFlight: Int
        public var connected: Bool
        public var lastSequence: UInt64
        public var acknowledgedTotal: UInt64
        public var expiredTotal: UInt64
    }

    /// The figures of `subscriber`'s queue (zeros for a queue nobody published to or opened).
    public func figures(of subscriber: String) -> QueueFigures {
        state.withLock { state in
            let queue = state.queues[subscriber]
            let machine = queue?.machine ?? SubscriptionStateMachine()
            return QueueFigures(
                subscriber: subscriber, pending: machine.pendingCount, inFlight: machine.inFlightCount,
                connected: machine.isConnected, lastSequence: machine.lastSequence,
                acknowledgedTotal: machine.acknowledgedTotal, expiredTotal: machine.expiredTotal)
        }
    }

    /// Whether the broker holds a queue for `subscriber`: one that was published to (kept across restarts with its
    /// totals) or opened by a Subscribe since the broker started.
    public func holdsQueue(_ subscriber: String) -> Bool {
        state.withLock { $0.queues[subscriber] != nil }
    }

    /// Says that retention dropped `count` messages of `subscriber`'s queue, throttled (`dropLines`): the
    /// subscriber hears of it from the gap in the sequences it is sent next.
    func logDropped(_ count: Int, of subscriber: String) {
        let logger = logger
        dropLines.throttle(subscriber).submit { notShown in
            if notShown > 0 {
                logger.warning(
                    "notifications dropped by retention",
                    ["subscriber": subscriber, "count": "\(count)", "lines_not_shown": "\(notShown)"])
            } else {
                logger.warning("notifications dropped by retention", ["subscriber": subscriber, "count": "\(count)"])
            }
        }
    }

    /// Applies retention to every queue now (the commit thread does it every second).
    public func expireNow() {
        let now = nowMs()
        let expired = state.withLock { state -> [(String, Int)] in
            var expired: [(String, Int)] = []
            for name in state.queues.keys {
                guard let count = state.expire(name, nowMs: now, retention: retention) else { continue }
                expired.append((name, count))
            }
            return expired
        }
        for (name, count) in expired { logDropped(count, of: name) }
    }
}
