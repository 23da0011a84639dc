import Foundation
import Synchronization
import TokenetRPC
import TokenetTransport
import TokenetWire

/// Publishing: recipients checked, message ids made, the message queued for the next group commit.
extension NotificationBroker {
    @discardableResult
    public func publish(_ notification: TspV1.Notification, to subscribers: [String]) async throws(TSPError)
        -> String
    {
        let recipients = try validRecipients(subscribers)
        var message = notification
        message.messageID = newMessageID()
        // The broker's to fill, as the id: the trace of the call publishing it (an operator's Publish, say), or
        // the one the message was made under.
        message.traceID = FlowTrace.active ?? notification.traceID
        let bytes = try prepare(&message)
        try await waitForCommit { state in
            state.enqueue(message, bytes: bytes, for: recipients)
        }
        return message.messageID
    }

    /// Stamps the publication time, clears what the broker fills per queue, and checks and serializes the message.
    func prepare(_ message: inout TspV1.Notification) throws(TSPError) -> [UInt8] {
        message.publishedAtMs = nowMs()
        message.sequence = 0
        message.deliveryAttempt = 0
        let bytes: [UInt8]
        do {
            bytes = try message.serializedBytes()
        } catch {
            throw TSPError(.invalidArgument, "the notification cannot be encoded: \(error)")
        }
        let size = bytes.count
        guard size <= Self.maximumMessageBytes else {
            throw TSPError(
                .invalidArgument,
                "the notification is \(size) bytes; the broker takes at most \(Self.maximumMessageBytes)")
        }
        guard !message.sender.isEmpty else {
            throw TSPError(.invalidArgument, "a notification needs a sender (CPS, MG, TNS or an issuer id)")
        }
        return bytes
    }

    /// A random prefix drawn when the broker opens, then a counter: unique across the broker's restarts (56 random
    /// bits per start), cheap to make, and free of long digit runs, which the logs' card-number masking would hide.
    func newMessageID() -> String {
        "msg-\(idPrefix)-\(idCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
    }

    static func randomLetters(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return String((0..<count).map { _ in letters[Int.random(in: 0..<letters.count, using: &generator)] })
    }

    /// Each recipient once, in the order given; refuses names that are not "wallet/ID" or "issuer/ID".
    func validRecipients(_ subscribers: [String]) throws(TSPError) -> [String] {
        // Names seen before are known to be valid: parsing each on every publish would cost more than storing.
        if subscribers.count == 1, recipientCache.withLock({ $0.contains(subscribers[0]) }) { return subscribers }
        let valid = try Self.validRecipients(subscribers)
        recipientCache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache.formUnion(valid)
        }
        return valid
    }

    static func validRecipients(_ subscribers: [String]) throws(TSPError) -> [String] {
        guard !subscribers.isEmpty else {
            throw TSPError(.invalidArgument, "a notification needs at least one subscriber (\"ROLE/NODE_ID\")")
        }
        var seen: Set<String> = []
        var result: [String] = []
        for subscriber in subscribers where seen.insert(subscriber).inserted {
            let identity: PeerIdentity
            do {
                identity = try PeerIdentity(uri: PeerIdentity.uriScheme + subscriber)
            } catch {
                throw TSPError(
                    .invalidArgument, "subscriber \"\(subscriber)\" is not ROLE/NODE_ID: \(error.message)")
            }
            guard identity.role == .wallet || identity.role == .issuer else {
                throw TSPError(
                    .invalidArgument, "subscriber \"\(subscriber)\": only wallet and issuer nodes have queues")
            }
            result.append(subscriber)
        }
        return result
    }
}

extension NotificationBroker.State {
    /// Queues `message` for each recipient in the next group commit, with the sequence it takes in each queue;
    /// `journalID` names the TSP journal row the same commit removes.
    mutating func enqueue(
        _ message: TspV1.Notification, bytes: [UInt8], for recipients: [String], journalID: Int64? = nil
    ) {
        var message = message
        for recipient in recipients {
            message.sequence = withQueue(recipient, creating: true) { queue in
                queue.allocated += 1
                return queue.allocated
            }!
            batch.inserts.append(.init(subscriber: recipient, notification: message, bytes: bytes))
            touch(recipient)
        }
        if let journalID { batch.journalDeletes.append(journalID) }
    }
}
