import Foundation

extension NodeContext {
    /// The system's words for what the operator fixes by hand: a directory in the file's place, its mode or owner,
    /// the immutable attribute, a read-only mount. A full disk or an I/O error is no such thing (status 1).
    private static let fixedByHand = [EISDIR, ENOTDIR, EACCES, EPERM, EROFS].map { String(cString: strerror($0)) }

    /// A file of the data directory the node cannot open or write at its start (a directory in its place, an
    /// immutable file) is the operator's to fix before a restart can help: status 2, as for the data directory and
    /// its database, with what to check. It was status 1 with the bare system error, as a node failing while running.
    static func operatorsToFix<T>(_ open: () throws(NodeError) -> T) throws(NodeError) -> T {
        do {
            return try open()
        } catch  where error.code == .io && fixedByHand.contains(where: { error.message.hasSuffix(": \($0)") }) {
            throw NodeError(
                .config,
                "\(error.description); the node keeps this file in its data directory: make it a regular file this "
                    + "user can write (check its mode and owner, and `lsattr` for the immutable attribute), then start "
                    + "the node again")
        }
    }

    /// This node's instance id (`NodeInstance`, kept in its data directory), made at its first start.
    public func instanceID() throws(NodeError) -> String {
        try Self.operatorsToFix { () throws(NodeError) in try NodeInstance.id(directory: dataDirectory) }
    }

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
        var subscriberOptions = NotificationSubscriber.Options(instanceID: try instanceID())
        subscriberOptions.beforeSubscribing = beforeSubscribing
        subscriberOptions.isStarting = { [outgoing] in outgoing.isStarting }
        let processed = try Self.operatorsToFix { () throws(NodeError) in
            try ProcessedNotificationLog.open(directory: dataDirectory)
        }
        let subscriber = NotificationSubscriber(
            tsp: try channel(to: .tsp), handler: handler, processed: processed, logger: logger,
            options: subscriberOptions)
        runInBackground { await subscriber.run() }
        return subscriber
    }
}
