import TokenetWire

/// What a node does with the messages the TSP's broker delivers to it (the issuer app's `processNotification`, the
/// wallet's token and key updates). The subscriber calls it once per message id, in queue order, and acknowledges the
/// message to the broker only after it returns, so a node that stops while handling a message gets it again.
public protocol NotificationHandler: Sendable {
    /// Throwing means "not handled, deliver it again later" (a peer the handling needs is unreachable): the message
    /// is neither recorded nor acknowledged, and the subscriber reopens its stream after a backoff, so the broker
    /// sends it again, still in order. Permanent failures should be logged and not thrown, or they would come back
    /// forever.
    func handle(_ notification: TspV1.Notification) async throws

    /// The subscriber's stream is open: it carried its first message, or stayed up a while with none. What the
    /// broker may have dropped while the node was away (its retention) can be asked for now. Called once per
    /// stream; it must return at once, leaving any call it leads to for a task of the node's own.
    func streamOpened()
}

extension NotificationHandler {
    public func streamOpened() {}
}
