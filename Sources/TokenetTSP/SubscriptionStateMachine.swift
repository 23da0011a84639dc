import TokenetWire

/// The delivery protocol of one subscriber queue, without I/O: which messages wait, which are in flight on the
/// current stream, and what to send, end, persist or delete when something happens.
///
/// Messages are kept in sequence order and sent in that order, so order holds per queue and therefore per card. At
/// most `window` messages are in flight (sent on the current stream and not acknowledged): a subscriber that stops
/// acknowledging stops receiving, which is the broker's backpressure. A new stream replaces the old one and starts
/// again from the oldest unacknowledged message, so what was in flight on the old stream is sent again with its
/// delivery attempt increased.
///
/// Delivery attempts survive a restart without a write per message: the queue's `sentThrough` watermark says every
/// message up to it was sent at least once, and only redeliveries (attempt 2 and later) are recorded one by one.
struct SubscriptionStateMachine: Sendable {
    /// A queued message and how many times it was sent before.
    struct Message: Sendable, Hashable {
        /// Message id, sequence, publication time and body; `delivery_attempt` is filled when it is sent.
        var notification: TspV1.Notification
        var sends: UInt32
        /// The size of its serialized form, which the queue's byte bound counts.
        var size: Int

        var sequence: UInt64 { notification.sequence }
    }

    /// A redelivered message's attempt, for the store.
    struct Attempt: Sendable, Hashable {
        var sequence: UInt64
        var attempts: UInt32
    }

    enum EndReason: Sendable, Hashable {
        /// A newer Subscribe took the queue over.
        case replaced
    }

    enum Action: Sendable, Hashable {
        /// Send these messages, in order, on stream `stream`.
        case send(stream: UInt64, [TspV1.Notification])
        /// End stream `stream`.
        case end(stream: UInt64, EndReason)
        /// Persist delivery progress: the new watermark (nil: unchanged) and the attempts of redelivered messages.
        case recordDeliveries(sentThrough: UInt64?, redelivered: [Attempt])
        /// Remove these messages (acknowledged or expired) from storage, with the queue's new totals.
        case delete(sequences: [UInt64])
    }

    /// The result of an acknowledgement.
    struct Acknowledgement: Sendable, Hashable {
        var acknowledged: Int
        var unknown: Int
        var actions: [Action]
    }

    struct Stream: Sendable, Hashable {
        var id: UInt64
        var window: Int
        /// The next sequence to consider sending; everything below it was sent on this stream or is gone.
        var cursor: UInt64
        var inFlight: Set<UInt64> = []
    }

    private(set) var messages: [UInt64: Message] = [:]
    private var sequenceByID: [String: UInt64] = [:]
    private(set) var lastSequence: UInt64
    private(set) var sentThrough: UInt64
    private(set) var acknowledgedTotal: UInt64
    private(set) var expiredTotal: UInt64
    /// The serialized size of the pending messages, which the queue holds in memory.
    private(set) var queuedBytes = 0
    private(set) var stream: Stream?
    /// No pending message has a lower sequence (see `oldestPending`).
    private var lowestHint: UInt64 = 1

    /// A queue as storage restored it (empty for a new queue).
    init(
        restoring restored: [Message] = [], lastSequence: UInt64 = 0, sentThrough: UInt64 = 0,
        acknowledgedTotal: UInt64 = 0, expiredTotal: UInt64 = 0
    ) {
        self.lastSequence = lastSequence
        self.sentThrough = sentThrough
        self.acknowledgedTotal = acknowledgedTotal
        self.expiredTotal = expiredTotal
        for var message in restored {
            if message.sequence <= sentThrough { message.sends = max(message.sends, 1) }
            if let replaced = messages.updateValue(message, forKey: message.sequence) { queuedBytes -= replaced.size }
            queuedBytes += message.size
            sequenceByID[message.notification.messageID] = message.sequence
            self.lastSequence = max(self.lastSequence, message.sequence)
        }
        lowestHint = restored.map(\.sequence).min() ?? self.lastSequence + 1
    }

    var pendingCount: Int { messages.count }

    /// Whether the queue holds more messages or bytes than `retention` allows, so that `expire` must run now rather
    /// than at the next second's sweep.
    func exceeds(_ retention: NotificationRetention) -> Bool {
        messages.count > retention.maxQueued || queuedBytes > retention.maxQueuedBytes
    }
    var inFlightCount: Int { stream?.inFlight.count ?? 0 }
    var isConnected: Bool { stream != nil }

    // MARK: Events

    /// Newly persisted messages, in increasing sequence order, with the sizes of their serialized forms.
    mutating func published(_ published: [(notification: TspV1.Notification, size: Int)]) -> [Action] {
        for (notification, size) in published {
            let message = Message(notification: notification, sends: 0, size: size)
            if let replaced = messages.updateValue(message, forKey: notification.sequence) {
                queuedBytes -= replaced.size
            }
            queuedBytes += size
            sequenceByID[notification.messageID] = notification.sequence
            lastSequence = max(lastSequence, notification.sequence)
            lowestHint = min(lowestHint, notification.sequence)
            // Sequences normally arrive in order; one that does not must still be sent, not skipped.
            if let cursor = stream?.cursor, notification.sequence < cursor { stream?.cursor = notification.sequence }
        }
        return fill()
    }

    /// A new stream opens the queue; an open one ends, and delivery restarts from the oldest pending message.
    mutating func subscribed(stream id: UInt64, window: Int) -> [Action] {
        var actions: [Action] = []
        if let old = stream { actions.append(.end(stream: old.id, .replaced)) }
        let oldest = oldestPending
        stream = Stream(id: id, window: max(1, window), cursor: oldest)
        return actions + fill()
    }

    /// Stream `id` ended (the subscriber went away or the call was cancelled). What it had in flight stays queued.
    mutating func disconnected(stream id: UInt64) {
        if stream?.id == id { stream = nil }
    }

    /// The subscriber acknowledged these ids: each pending one is removed, anything else counted as unknown.
    mutating func acknowledged(_ ids: [String]) -> Acknowledgement {
        var removed: [UInt64] = []
        var unknown = 0
        var current = stream
        stream = nil  // one reference to the in-flight set while it changes
        for id in ids {
            guard let sequence = sequenceByID.removeValue(forKey: id) else {
                unknown += 1
                continue
            }
            if let message = messages.removeValue(forKey: sequence) { queuedBytes -= message.size }
            current?.inFlight.remove(sequence)
            removed.append(sequence)
        }
        stream = current
        acknowledgedTotal += UInt64(removed.count)
        var actions: [Action] = removed.isEmpty ? [] : [.delete(sequences: removed)]
        actions += fill()
        return Acknowledgement(acknowledged: removed.count, unknown: unknown, actions: actions)
    }

    /// Drops messages published before `nowMs - maxAge`, and the oldest beyond `maxQueued` messages or
    /// `maxQueuedBytes`.
    mutating func expire(nowMs: UInt64, retention: NotificationRetention) -> [Action] {
        let cutoff = nowMs >= retention.maxAgeMs ? nowMs - retention.maxAgeMs : 0
        let excess = messages.count - retention.maxQueued
        var bytesLeft = queuedBytes
        // Oldest first, stopping at the first message young enough: queues are in publication order, so this
        // costs what it drops, not the length of the queue (it runs every second on every queue).
        var dropped: [UInt64] = []
        var sequence = oldestPending
        while sequence <= lastSequence {
            defer { sequence += 1 }
            guard let message = messages[sequence] else { continue }
            guard
                dropped.count < excess || bytesLeft > retention.maxQueuedBytes
                    || message.notification.publishedAtMs < cutoff
            else { break }
            dropped.append(sequence)
            bytesLeft -= message.size
        }
        guard !dropped.isEmpty else { return [] }
        var current = stream
        stream = nil  // one reference to the in-flight set while it changes
        for sequence in dropped {
            if let message = messages.removeValue(forKey: sequence) {
                sequenceByID[message.notification.messageID] = nil
                queuedBytes -= message.size
            }
            current?.inFlight.remove(sequence)
        }
        stream = current
        expiredTotal += UInt64(dropped.count)
        return [.delete(sequences: dropped)] + fill()
    }

    /// The lowest pending sequence (or `lastSequence + 1`), found from a hint that only moves past removed
    /// messages, so finding it again costs only what was removed since.
    private var oldestPending: UInt64 {
        mutating get {
            while lowestHint <= lastSequence, messages[lowestHint] == nil { lowestHint += 1 }
            return lowestHint
        }
    }

    // MARK: Sending

    /// Sends pending messages in order while the window has room.
    private mutating func fill() -> [Action] {
        guard var current = stream, current.inFlight.count < current.window else { return [] }
        // Detach the stream while it changes: a second reference would make every insert copy the in-flight set.
        stream = nil
        var batch: [TspV1.Notification] = []
        var redelivered: [Attempt] = []
        var watermark: UInt64?
        while current.inFlight.count < current.window, current.cursor <= lastSequence {
            let sequence = current.cursor
            current.cursor += 1
            guard var message = messages[sequence], !current.inFlight.contains(sequence) else { continue }
            message.sends += 1
            messages[sequence] = message
            current.inFlight.insert(sequence)
            var notification = message.notification
            notification.deliveryAttempt = message.sends
            batch.append(notification)
            if sequence > sentThrough {
                sentThrough = sequence
                watermark = sequence
            } else {
                redelivered.append(Attempt(sequence: sequence, attempts: message.sends))
            }
        }
        stream = current
        guard !batch.isEmpty else { return [] }
        return [
            .send(stream: current.id, batch),
            .recordDeliveries(sentThrough: watermark, redelivered: redelivered),
        ]
    }
}
