import Synchronization
import TokenetWire

/// The handler a node uses until it has its own processing: it logs each message (ids, sender, type and card id,
/// never a body) and keeps the latest ones for inspection.
public final class RecordingNotificationHandler: NotificationHandler {
    private let logger: Logger
    private let limit: Int
    private let kept = Mutex<[TspV1.Notification]>([])

    public init(logger: Logger, keep limit: Int = 100) {
        self.logger = logger
        self.limit = max(1, limit)
    }

    /// The latest messages handled, oldest first.
    public var received: [TspV1.Notification] { kept.withLock { $0 } }

    public func handle(_ notification: TspV1.Notification) async {
        kept.withLock { kept in
            kept.append(notification)
            if kept.count > limit { kept.removeFirst(kept.count - limit) }
        }
        logger.info(
            "notification received",
            [
                "message_id": notification.messageID, "sequence": "\(notification.sequence)",
                "sender": notification.sender, "topic": notification.topic, "type": notification.messageType,
                "card_id": notification.cardID, "attempt": "\(notification.deliveryAttempt)",
            ])
    }
}
