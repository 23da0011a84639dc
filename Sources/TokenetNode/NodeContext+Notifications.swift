extension NodeContext {
    /// Starts this node's subscription to the TSP's notifications (`--tsp`, over this node's certificate, which
    /// names its queue), handing each message to `handler`; the processed-id journal lives in the data directory.
    /// Returns nil without `--tsp`, or in plaintext mode, where the broker cannot tell whose queue to open.
    @discardableResult
    public func subscribeToNotifications(handler: any NotificationHandler) throws(NodeError)
        -> NotificationSubscriber?
    {
        guard options.peers[.tsp] != nil else { return nil }
        guard !options.plaintext else {
            logger.warning("--plaintext: not subscribing to the TSP's notifications (they need a certificate)")
            return nil
        }
        let subscriber = NotificationSubscriber(
            tsp: try channel(to: .tsp), handler: handler,
            processed: try ProcessedNotificationLog.open(directory: dataDirectory), logger: logger,
            options: .init(instanceID: try NodeInstance.id(directory: dataDirectory)))
        runInBackground { await subscriber.run() }
        return subscriber
    }
}
