import TokenetStorage
import TokenetWire

/// Everything one group commit writes: new messages, delivery progress, removals and queue totals.
struct NotificationWriteBatch: Sendable {
    struct Insert: Sendable {
        var subscriber: String
        /// With its sequence in this queue.
        var notification: TspV1.Notification
        /// The notification serialized once for all its recipients, without sequence (stored in its own column).
        var bytes: [UInt8]
    }

    struct Counters: Sendable, Equatable {
        var lastSequence: UInt64
        var sentThrough: UInt64
        var acknowledgedTotal: UInt64
        var expiredTotal: UInt64
    }

    var inserts: [Insert] = []
    var attempts: [String: [SubscriptionStateMachine.Attempt]] = [:]
    var deletes: [String: [UInt64]] = [:]
    /// The latest totals of each queue touched since the last commit.
    var counters: [String: Counters] = [:]
    /// Rows of the TSP's notification journal whose messages `inserts` holds: removed in the same transaction.
    var journalDeletes: [Int64] = []

    var isEmpty: Bool {
        inserts.isEmpty && attempts.isEmpty && deletes.isEmpty && counters.isEmpty && journalDeletes.isEmpty
    }

    /// Adds `later`'s writes after this batch's (a failed batch's removals and totals retried with the next).
    mutating func merge(_ later: NotificationWriteBatch) {
        inserts += later.inserts
        for (queue, list) in later.attempts { attempts[queue, default: []] += list }
        for (queue, list) in later.deletes { deletes[queue, default: []] += list }
        counters.merge(later.counters) { _, new in new }
        journalDeletes += later.journalDeletes
    }
}

/// One queue as storage holds it, for the broker to restore at start.
struct StoredQueue: Sendable {
    var subscriber: String
    var counters: NotificationWriteBatch.Counters
    var messages: [SubscriptionStateMachine.Message]
}

/// The broker's tables in the TSP's database. Thin: the broker decides, this writes a batch in one transaction and
/// reads everything back at start.
struct NotificationStore: Sendable {
    let database: Database

    static let migration = Migration(
        version: 3, name: "notifications",
        sql: """
            CREATE TABLE notification_queues (
                subscriber TEXT PRIMARY KEY,
                last_sequence INTEGER NOT NULL,
                sent_through INTEGER NOT NULL,
                acknowledged_total INTEGER NOT NULL,
                expired_total INTEGER NOT NULL
            );
            CREATE TABLE notifications (
                subscriber TEXT NOT NULL,
                sequence INTEGER NOT NULL,
                message_id TEXT NOT NULL,
                published_at_ms INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                message BLOB NOT NULL,
                PRIMARY KEY (subscriber, sequence)
            ) WITHOUT ROWID;
            """)

    /// Writes `batch` in one transaction (one fsync however many messages it holds).
    func commit(_ batch: NotificationWriteBatch) throws {
        try database.transaction { tx in
            for insert in batch.inserts {
                let notification = insert.notification
                try tx.execute(
                    """
                    INSERT INTO notifications (subscriber, sequence, message_id, published_at_ms, message)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                    [
                        insert.subscriber, Int64(notification.sequence), notification.messageID,
                        Int64(notification.publishedAtMs), insert.bytes,
                    ])
            }
            for (subscriber, list) in batch.attempts {
                for attempt in list {
                    try tx.execute(
                        "UPDATE notifications SET attempts = ? WHERE subscriber = ? AND sequence = ?",
                        [Int64(attempt.attempts), subscriber, Int64(attempt.sequence)])
                }
            }
            for (subscriber, sequences) in batch.deletes {
                for range in Self.runs(sequences) {
                    try tx.execute(
                        "DELETE FROM notifications WHERE subscriber = ? AND sequence BETWEEN ? AND ?",
                        [subscriber, Int64(range.lowerBound), Int64(range.upperBound)])
                }
            }
            for id in batch.journalDeletes {
                try tx.execute("DELETE FROM notification_journal WHERE id = ?", [id])
            }
            for (subscriber, counters) in batch.counters {
                try tx.execute(
                    """
                    INSERT INTO notification_queues
                        (subscriber, last_sequence, sent_through, acknowledged_total, expired_total)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(subscriber) DO UPDATE SET last_sequence = excluded.last_sequence,
                        sent_through = excluded.sent_through, acknowledged_total = excluded.acknowledged_total,
                        expired_total = excluded.expired_total
                    """,
                    [
                        subscriber, Int64(counters.lastSequence), Int64(counters.sentThrough),
                        Int64(counters.acknowledgedTotal), Int64(counters.expiredTotal),
                    ])
            }
        }
    }

    /// Every queue with its pending messages, oldest first.
    func load() throws -> [StoredQueue] {
        try database.transaction { tx in
            var queues: [String: StoredQueue] = [:]
            for row in try tx.query(
                """
                SELECT subscriber, last_sequence, sent_through, acknowledged_total, expired_total
                FROM notification_queues
                """)
            {
                let subscriber = try row.text(0)
                queues[subscriber] = StoredQueue(
                    subscriber: subscriber,
                    counters: .init(
                        lastSequence: UInt64(try row.int64(1)), sentThrough: UInt64(try row.int64(2)),
                        acknowledgedTotal: UInt64(try row.int64(3)), expiredTotal: UInt64(try row.int64(4))),
                    messages: [])
            }
            let rows = try tx.query(
                "SELECT subscriber, sequence, attempts, message FROM notifications ORDER BY subscriber, sequence")
            for row in rows {
                let subscriber = try row.text(0)
                let bytes = try row.get(3, as: [UInt8].self)
                var notification = try TspV1.Notification(serializedBytes: bytes)
                notification.sequence = UInt64(try row.int64(1))
                let message = SubscriptionStateMachine.Message(
                    notification: notification, sends: UInt32(clamping: try row.int64(2)), size: bytes.count)
                queues[subscriber, default: StoredQueue(subscriber: subscriber, counters: .zero, messages: [])]
                    .messages.append(message)
            }
            return queues.values.sorted { $0.subscriber < $1.subscriber }
        }
    }

    /// Sorted, contiguous runs of `sequences`, so in-order acknowledgements delete with one statement per run.
    static func runs(_ sequences: [UInt64]) -> [ClosedRange<UInt64>] {
        var result: [ClosedRange<UInt64>] = []
        for sequence in sequences.sorted() {
            if let last = result.last, sequence <= last.upperBound + 1 {
                result[result.count - 1] = last.lowerBound...max(last.upperBound, sequence)
            } else {
                result.append(sequence...sequence)
            }
        }
        return result
    }
}

extension NotificationWriteBatch.Counters {
    static let zero = Self(lastSequence: 0, sentThrough: 0, acknowledgedTotal: 0, expiredTotal: 0)
}
