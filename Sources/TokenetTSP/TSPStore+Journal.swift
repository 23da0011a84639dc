import TokenetStorage
import TokenetWire

/// A notification the TSP journaled in the transaction of the change it reports, waiting to be published.
public struct JournaledNotification: Sendable, Equatable {
    /// The journal row, removed once the broker has stored the message.
    public var journalID: Int64
    /// "ROLE/NODE_ID" queues, resolved when the change was committed.
    public var subscribers: [String]
    /// With the message id given when journaled: a message published again after a crash keeps it, so receivers,
    /// which keep the ids they processed, take it for the one they may have seen.
    public var notification: TspV1.Notification
}

/// A notification a change makes about a token (its card id), for the token's parties.
struct Announcement: Sendable {
    var notification: TspV1.Notification
    var recipients: Set<D1.Recipient>
}

/// A committed change's result with the notifications journaled in its transaction.
struct Journaled<Value> {
    var value: Value
    var notifications: [JournaledNotification]
    /// Announcements about a token with no known party (digitized or registered without a certificate).
    var unaddressed: [TspV1.Notification] = []
}

/// The outbox of the TSP's state changes: a change and the notifications that report it are written in one
/// transaction, so a crash between the commit and the broker's cannot lose a notification. The broker removes a
/// row in the commit that stores its message, and at start publishes the rows a crash left.
extension TSPStore {
    static let journalMigration = Migration(
        version: 12, name: "notification_journal",
        sql: """
            CREATE TABLE notification_journal (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                message_id TEXT NOT NULL UNIQUE,
                subscribers TEXT NOT NULL,
                message BLOB NOT NULL
            );
            """)

    /// Runs `change` in one transaction and journals, in the same transaction, what `announce` makes of its result.
    func journaling<T>(
        _ change: (Transaction) throws -> T, announce: (T) throws -> [Announcement]
    ) throws -> Journaled<T> {
        try database.transaction { tx in
            let value = try change(tx)
            var result = Journaled(value: value, notifications: [])
            for announcement in try announce(value) {
                let subscribers = try Self.parties(tx, of: announcement)
                guard !subscribers.isEmpty else {
                    result.unaddressed.append(announcement.notification)
                    continue
                }
                var notification = announcement.notification
                notification.messageID = "msg-" + NotificationBroker.randomLetters(16)
                _ = try tx.execute(
                    "INSERT INTO notification_journal (message_id, subscribers, message) VALUES (?, ?, ?)",
                    [notification.messageID, subscribers.joined(separator: "\n"), try notification.serializedBytes()])
                result.notifications.append(
                    JournaledNotification(
                        journalID: try tx.lastInsertRowID, subscribers: subscribers, notification: notification))
            }
            return result
        }
    }

    /// Removes journal rows whose messages a publisher other than the broker took.
    func forgetJournaled(_ ids: [Int64]) throws {
        try database.transaction { tx in
            for id in ids {
                _ = try tx.execute("DELETE FROM notification_journal WHERE id = ?", [id])
            }
        }
    }

    /// Those of `ids` whose rows are still journaled (not yet published).
    func journaledIDs(among ids: [Int64]) throws -> Set<Int64> {
        var found: Set<Int64> = []
        for id in ids where try database.queryOne("SELECT 1 FROM notification_journal WHERE id = ?", [id]) != nil {
            found.insert(id)
        }
        return found
    }

    /// The broker queues of a token's parties: "wallet/NODE" from digitization, "issuer/NODE" from registration.
    private static func parties(_ tx: Transaction, of announcement: Announcement) throws -> [String] {
        guard
            let row = try tx.queryOne(
                """
                SELECT t.wallet_node_id, i.peer_node_id FROM tokens t LEFT JOIN issuers i ON i.id = t.issuer_id
                WHERE t.digital_card_id = ?
                """, [announcement.notification.cardID])
        else { return [] }
        var queues: [String] = []
        if announcement.recipients.contains(.wallet), let node = try row.get(0, as: String?.self) {
            queues.append("wallet/\(node)")
        }
        if announcement.recipients.contains(.issuerApp), let node = try row.get(1, as: String?.self) {
            queues.append("issuer/\(node)")
        }
        return queues
    }
}

extension NotificationStore {
    /// The journal's rows, oldest first: what a crash kept from reaching the broker.
    func journaled() throws -> [JournaledNotification] {
        try database.query("SELECT id, subscribers, message FROM notification_journal ORDER BY id").map { row in
            JournaledNotification(
                journalID: try row.int64(0),
                subscribers: try row.text(1).split(separator: "\n").map(String.init),
                notification: try TspV1.Notification(serializedBytes: try row.get(2, as: [UInt8].self)))
        }
    }
}
