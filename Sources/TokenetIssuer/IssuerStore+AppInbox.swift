import TokenetStorage
import TokenetWire

/// The issuer app's notifications on disk. The subscriber records a message as handled once the handler returns,
/// so a message kept only in memory would be gone after a restart (a pending AUTHN request with it); the app keeps
/// each one here and rebuilds its inbox from them when it starts. Bodies carry card ids and last fours, never a PAN.
extension IssuerStore {
    static let appInboxSchema = """
        CREATE TABLE app_inbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, notification BLOB NOT NULL);
        CREATE TABLE app_authn_answers (authn_request_id TEXT PRIMARY KEY, status TEXT NOT NULL);
        """

    /// Keeps a message once and returns its row; nil when its id was kept before (a redelivery). Only the newest
    /// `capacity` stay.
    func keepAppNotification(_ notification: TspV1.Notification, capacity: Int) throws(IssuerError) -> Int64? {
        try storage("keep an app notification") {
            try database.transaction { tx in
                let inserted =
                    try tx.execute(
                        "INSERT OR IGNORE INTO app_inbox (message_id, notification) VALUES (?, ?)",
                        [notification.messageID, try notification.serializedBytes()]
                    ).changes == 1
                guard inserted else { return nil }
                let row = try tx.lastInsertRowID
                _ = try tx.execute(
                    "DELETE FROM app_inbox WHERE id <= (SELECT MAX(id) FROM app_inbox) - ?", [Int64(capacity)])
                return row
            }
        }
    }

    /// The kept messages, oldest first, each with its row.
    func appNotifications() throws(IssuerError) -> [(notification: TspV1.Notification, row: Int64)] {
        try storage("read the app's notifications") {
            try database.query("SELECT notification, id FROM app_inbox ORDER BY id").map {
                (try TspV1.Notification(serializedBytes: try $0.get(0, as: [UInt8].self)), try $0.int64(1))
            }
        }
    }

    func recordAuthnAnswer(_ authnRequestID: String, status: String) throws(IssuerError) {
        _ = try storage("record an authentication answer") {
            try database.execute(
                "INSERT OR REPLACE INTO app_authn_answers (authn_request_id, status) VALUES (?, ?)",
                [authnRequestID, status])
        }
    }

    func authnAnswers() throws(IssuerError) -> [(id: String, status: String)] {
        try storage("read the authentication answers") {
            try database.query("SELECT authn_request_id, status FROM app_authn_answers ORDER BY rowid").map {
                (id: try $0.text(0), status: try $0.text(1))
            }
        }
    }
}
