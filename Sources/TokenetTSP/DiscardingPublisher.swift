import Foundation
import TokenetNode
import TokenetWire

/// A publisher for a TSP without a broker: each message is logged (type and card id only) and dropped, so the
/// flows that publish still answer their callers.
struct DiscardingPublisher: NotificationPublishing {
    var logger: Logger?

    init(logger: Logger? = nil) {
        self.logger = logger
    }

    func publish(_ notification: TspV1.Notification, to subscribers: [String]) async throws(TSPError) -> String {
        logger?.warning(
            "no broker: notification dropped",
            [
                "type": notification.messageType, "card": notification.cardID,
                "to": subscribers.joined(separator: ","),
            ])
        return UUID().uuidString.lowercased()
    }
}
