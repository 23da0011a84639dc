import Foundation
import Synchronization
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// `tsp.v1.Notifications`: the broker's RPC face. The caller's queue is the identity in its certificate, so a
/// subscriber can only read and acknowledge its own messages.
struct NotificationsService: TspV1.Notifications.ServiceProtocol {
    let broker: NotificationBroker
    let logger: Logger
    /// Replacements of subscribers' streams, shared by every Subscribe call (`SubscriberContention`).
    let contention = SubscriberContention.Shared()
    /// The node instance holding each subscriber's stream (`SubscriberInstances`), which issuers' registrations read
    /// too (`IssuersService`).
    var instances = SubscriberInstances.Shared()

    func subscribe(
        _ request: TspV1.SubscribeRequest, responses: ResponseWriter<TspV1.Notification>, context: ServerContext
    ) async throws {
        let subscriber = try Self.queue(of: context)
        let instance = request.instanceID
        guard instance.isEmpty || NodeInstance.isValid(instance) else {
            throw RPCError(
                .invalidArgument, "instance_id must be 1 to 64 letters, digits, '-' or '_' (or empty, for a tool)")
        }
        let asked = Int(request.maxInFlight)
        let window = asked == 0 ? NotificationBroker.defaultWindow : min(asked, NotificationBroker.maximumWindow)
        let log = logger.withTraceID(context.traceID)
        let nowMs = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        // Decided and opened under one lock, so two nodes subscribing at once cannot both get in.
        let (outbox, decision) = try instances.state.withLock { table throws(RPCError) in
            let decision = table.decide(subscriber: subscriber, instanceID: instance)
            if case .refuse(let held) = decision {
                throw RPCError(
                    .alreadyExists,
                    "\(subscriber) is subscribed already from another node (instance \(held.instanceID), for "
                        + "\(DurationText.describe(.milliseconds(Int64(nowMs - min(nowMs, held.sinceMs)))))): two nodes "
                        + "share this certificate, and each would take the other's messages; give each node its own "
                        + "identity (Tools/gen-certs), or stop the other. A node moved to a new data directory gets in "
                        + "once the TSP finds the old node's connection gone")
            }
            let outbox = broker.open(subscriber: subscriber, window: window)
            table.opened(subscriber: subscriber, streamID: outbox.streamID, instanceID: instance, atMs: nowMs)
            return (outbox, decision)
        }
        defer {
            instances.state.withLock { $0.closed(subscriber: subscriber, streamID: outbox.streamID) }
            broker.close(subscriber: subscriber, streamID: outbox.streamID)
        }
        // A node reconnecting replaces its own stream: normal. Replacements without instances to tell them apart
        // (tools, older nodes) several times a minute may be two nodes on one certificate.
        if case .open(replacing: true, sameInstance: false) = decision,
            case .warn(_, let count) = contention.state.withLock({ $0.replaced(subscriber, atMs: nowMs) })
        {
            log.warning(
                "subscriber's stream replaced \(count) times within a minute: two nodes seem to share its "
                    + "certificate, and its messages go to whichever holds the stream; give each node its own "
                    + "identity (Tools/gen-certs), or stop the other",
                ["subscriber": subscriber])
        }
        log.info(
            "subscriber connected",
            ["subscriber": subscriber, "window": "\(window)", "instance": instance.isEmpty ? "-" : instance])
        do {
            while true {
                for notification in try await outbox.next() {
                    try await responses.send(notification)
                }
            }
        } catch is NotificationOutbox.Replaced {
            log.info("subscriber stream replaced by a newer one", ["subscriber": subscriber])
            throw RPCError(
                .aborted,
                "a newer Subscribe from \(subscriber) replaced this stream; its unacknowledged messages "
                    + "go to the new stream")
        } catch {
            log.info("subscriber disconnected", ["subscriber": subscriber])
            throw error
        }
    }

    func acknowledge(_ request: TspV1.AcknowledgeRequest, context: ServerContext) async throws
        -> TspV1.AcknowledgeResponse
    {
        let subscriber = try Self.queue(of: context)
        guard request.messageIds.count <= NotificationBroker.maximumAcknowledgeBatch else {
            throw RPCError(
                .invalidArgument,
                "\(request.messageIds.count) ids in one Acknowledge; send at most "
                    + "\(NotificationBroker.maximumAcknowledgeBatch) per call")
        }
        guard !request.messageIds.isEmpty else { return TspV1.AcknowledgeResponse() }
        do {
            let counts = try await broker.acknowledge(subscriber: subscriber, ids: request.messageIds)
            var response = TspV1.AcknowledgeResponse()
            response.acknowledged = UInt32(counts.acknowledged)
            response.unknown = UInt32(counts.unknown)
            return response
        } catch {
            logger.withTraceID(context.traceID).error("acknowledgement failed", ["error": error.description])
            throw error.rpcError
        }
    }

    /// Queues one Publish may name: the message is stored in each before the call is answered.
    static let maxPublishSubscribers = 1_000

    func publish(_ request: TspV1.PublishRequest, context: ServerContext) async throws -> TspV1.PublishResponse {
        guard let notification = request.notification else {
            throw RPCError(.invalidArgument, "notification is required: sender, topic, type, card id and body")
        }
        guard request.subscribers.count <= Self.maxPublishSubscribers else {
            throw RPCError(
                .invalidArgument,
                "a message goes to at most \(Self.maxPublishSubscribers) subscribers, not \(request.subscribers.count); "
                    + "publish it in parts")
        }
        // Each once, as notifications.proto says: a queue named twice got the message once, and the caller could not
        // tell which of its names had counted.
        let repeated = RepeatedIDs.of(request.subscribers)
        guard repeated.isEmpty else {
            throw RPCError(
                .invalidArgument,
                "subscribers names \(RepeatedIDs.named(repeated)) more than once; name each queue once")
        }
        try Self.checkPublished(notification)
        do {
            let id = try await broker.publish(notification, to: request.subscribers)
            // The first few by name and the count: one log line stays readable whatever the list.
            let named = request.subscribers.prefix(10).joined(separator: ",")
            logger.withTraceID(context.traceID).info(
                "notification published by an operator",
                [
                    "message_id": id, "subscriber_count": "\(request.subscribers.count)",
                    "subscribers": request.subscribers.count > 10 ? named + ",…" : named,
                ])
            return TspV1.PublishResponse(messageID: id)
        } catch {
            throw error.rpcError
        }
    }

    func queueStatus(_ request: TspV1.QueueStatusRequest, context: ServerContext) async throws
        -> TspV1.QueueStatusResponse
    {
        let subscriber: String
        if context.peer?.role == .operator {
            guard !request.subscriber.isEmpty else {
                throw RPCError(.invalidArgument, "name the queue to inspect, e.g. \"wallet/wallet-1\"")
            }
            do {
                subscriber = try NotificationBroker.validRecipients([request.subscriber])[0]
            } catch {
                throw error.rpcError
            }
            // A mistyped node id would otherwise read as an empty, disconnected queue.
            guard broker.holdsQueue(subscriber) else {
                throw RPCError(
                    .notFound,
                    "no queue \"\(subscriber)\": nothing was ever published to it, and no subscriber with that "
                        + "identity has subscribed since the TSP started")
            }
        } else {
            subscriber = try Self.queue(of: context)
            guard request.subscriber.isEmpty || request.subscriber == subscriber else {
                throw RPCError(
                    .permissionDenied, "\(subscriber) may only inspect its own queue, not \(request.subscriber)")
            }
        }
        let figures = broker.figures(of: subscriber)
        var response = TspV1.QueueStatusResponse()
        response.subscriber = subscriber
        response.pending = UInt64(figures.pending)
        response.inFlight = UInt32(figures.inFlight)
        response.connected = figures.connected
        response.lastSequence = figures.lastSequence
        response.acknowledgedTotal = figures.acknowledgedTotal
        response.expiredTotal = figures.expiredTotal
        return response
    }

    /// "ROLE/NODE_ID" of a wallet or issuer caller; anyone else has no queue.
    static func queue(of context: ServerContext) throws -> String {
        guard let peer = context.peer else {
            throw RPCError(.permissionDenied, "notifications need a client certificate naming the subscriber")
        }
        guard peer.role == .wallet || peer.role == .issuer else {
            throw RPCError(.permissionDenied, "role \(peer.role.rawValue) has no notification queue")
        }
        return "\(peer.role.rawValue)/\(peer.nodeID)"
    }
}
