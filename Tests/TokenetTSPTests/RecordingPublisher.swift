import Synchronization
import TokenetWire

@testable import TokenetTSP

/// A broker stand-in that records each publish (message and queues) and answers with a numbered id; it can be made
/// to fail to test that a committed change stands without its notification.
final class RecordingPublisher: NotificationPublishing {
    struct Publish: Sendable {
        var notification: TspV1.Notification
        var queues: [String]
    }

    private let state = Mutex<(publishes: [Publish], failing: Bool)>(([], false))

    var publishes: [Publish] { state.withLock { $0.publishes } }

    func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

    func publish(_ notification: TspV1.Notification, to subscribers: [String]) async throws(TSPError) -> String {
        try state.withLock { state throws(TSPError) in
            if state.failing { throw TSPError(.internal, "broker down") }
            state.publishes.append(Publish(notification: notification, queues: subscribers))
            return "msg-\(state.publishes.count)"
        }
    }

    /// The publishes of one message type, in order.
    func of(_ type: String) -> [Publish] {
        publishes.filter { $0.notification.messageType == type }
    }
}
