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

    private let state = Mutex<(publishes: [Publish], failure: TSPError?)>(([], nil))

    var publishes: [Publish] { state.withLock { $0.publishes } }

    func fail(_ failing: Bool) { fail(with: failing ? TSPError(.internal, "broker down") : nil) }

    /// Every publish fails with `error` until this is called again with nil.
    func fail(with error: TSPError?) { state.withLock { $0.failure = error } }

    func publish(_ notification: TspV1.Notification, to subscribers: [String]) async throws(TSPError) -> String {
        try state.withLock { state throws(TSPError) in
            if let failure = state.failure { throw failure }
            state.publishes.append(Publish(notification: notification, queues: subscribers))
            return "msg-\(state.publishes.count)"
        }
    }

    /// The publishes of one message type, in order.
    func of(_ type: String) -> [Publish] {
        publishes.filter { $0.notification.messageType == type }
    }
}
