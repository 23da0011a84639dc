extension NodeContext {
    /// Starts this node's subscription to the TSP's notifications (`--tsp`, over this node's certificate, which
    /// names its queue), handing each message to `handler`; the processed-id journal lives in the data directory.
    /// Returns nil without `--tsp`, or in plaintext mode, where the broker cannot tell whose queue to open.
    /// `beforeSubscribing` is awaited before the first Subscribe (`NotificationSubscriber.Options`).
    @discardableResult
    public func subscribeToNotifications(
        handler: any NotificationHandler, beforeSubscribing: (@Sendable () async -> Void)? = nil
    ) throws(NodeError) -> NotificationSubscriber? {
        guard options.peers[.tsp] != nil else { return nil }
        guard !options.plaintext else {
            logger.warning("--plaintext: not subscribing to the TSP's notifications (they need a certificate)")
            return nil
        }
        var subscriberOptions = NotificationSubscriber.Options(
            instanceID: try NodeInstance.id(directory: dataDirectory))
        subscriberOptions.beforeSubscribing = beforeSubscribing
        let subscriber = NotificationSubscriber(
            tsp: try channel(to: .tsp), handler: handler,
            processed: try ProcessedNotificationLog.open(directory: dataDirectory), logger: logger,
            options: subscriberOptions)
        runInBackground { await subscriber.run() }
        return subscriber
    }
}
