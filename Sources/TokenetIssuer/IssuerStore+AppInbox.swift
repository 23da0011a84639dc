import TokenetStorage
import TokenetWire

/// The issuer app's notifications on disk. The subscriber records a message as handled once the handler returns,
/// so a message kept only in memory would be gone after a restart (a pending AUTHN request with it); the app keeps
/// each one here, with what its action left (an authentication request, a resynchronised card id) in the same
/// transaction, and rebuilds its inbox from them when it starts. Bodies carry card ids and last fours, never a PAN.
///
/// Each is bounded: the newest `IssuerAppInbox.capacity` messages, the authentication requests until their
/// retention after they ended (`IssuerRetention`, pruned by `ends_at_ms`), one card id per digital card, dropped
/// when the token is deleted. A token the TSP tells deleted (CARD_STATE DEACTIVATED) is also recorded in
/// `deleted_tokens` in the same transaction, for the issuer's renewals and card-wide token changes to skip, and a
/// token any message from the TSP names leaves `unknown_tokens`: the TSP knows it.
extension IssuerStore {
    static let appInboxSchema = """
        CREATE TABLE app_inbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, notification BLOB NOT NULL);
        CREATE TABLE app_authn_answers (authn_request_id TEXT PRIMARY KEY, status TEXT NOT NULL);
        """

    /// The authentication requests and card ids apart from the messages that made them, which leave `app_inbox`
    /// after `capacity` newer ones. `inbox_row` is the asking message's row (the request's place in the app's pages).
    /// The row of `app_inbox_imports` asks for the import (the requests of a database from before this were only in
    /// its messages, which SQL cannot read), which reads the answers of `app_authn_answers` as
    /// `appAuthnAnswersDropSchema` moved them.
    static let appAuthnRequestsSchema = """
        CREATE TABLE app_authn_requests (
            authn_request_id TEXT PRIMARY KEY, inbox_row INTEGER NOT NULL, amount_minor INTEGER NOT NULL,
            currency TEXT NOT NULL, merchant TEXT NOT NULL, status TEXT NOT NULL, ends_at_ms INTEGER NOT NULL);
        CREATE INDEX app_authn_requests_by_end ON app_authn_requests(ends_at_ms);
        CREATE TABLE app_card_ids (
            digital_card_id TEXT PRIMARY KEY, card_id TEXT NOT NULL, pan_last4 TEXT NOT NULL, expiry TEXT NOT NULL);
        CREATE TABLE app_inbox_imports (singleton INTEGER PRIMARY KEY CHECK (singleton = 1));
        INSERT INTO app_inbox_imports (singleton) VALUES (1);
        """

    /// Nothing reads `app_authn_answers` but the import: its answers move into the import's row, for a database
    /// whose import is still to run (a JSON array of `[authn_request_id, status]`, in the order recorded; `[]` when
    /// there were none), and the table goes. A database imported already has no such row and loses only the empty
    /// table.
    static let appAuthnAnswersDropSchema = """
        ALTER TABLE app_inbox_imports ADD COLUMN authn_answers TEXT NOT NULL DEFAULT '[]';
        UPDATE app_inbox_imports SET authn_answers = (
            SELECT json_group_array(json_array(authn_request_id, status))
            FROM (SELECT authn_request_id, status FROM app_authn_answers ORDER BY rowid));
        DROP TABLE app_authn_answers;
        """

    /// The token of each authentication request (`AppAuthn.digital_card_id`), which its message alone held: once 500
    /// newer messages had pushed that out, the app could not tell whose card a pending request was for, and
    /// refused to proceed with it. NULL for a request kept before.
    static let appAuthnCardSchema = """
        ALTER TABLE app_authn_requests ADD COLUMN digital_card_id TEXT;
        """

    /// When each message arrived (ms since the epoch), which decides what the app did with an AUTHN (asked, or
    /// dropped as late: `IssuerAppInbox.classify`), so that a restart lists it as it was listed before. NULL for a
    /// message kept before this column, whose AUTHN is listed as asked, as it was then.
    static let appInboxArrivalSchema = """
        ALTER TABLE app_inbox ADD COLUMN arrived_at_ms INTEGER;
        """

    /// Keeps a message once, with what `action` leaves (see `IssuerAppInbox.receive`, given the same `nowMs`), and
    /// returns its row; nil when its id was kept before (a redelivery). Only the newest `capacity` messages stay.
    func keepAppNotification(
        _ notification: TspV1.Notification, action: IssuerAppInbox.Action, nowMs: UInt64, capacity: Int
    ) throws(IssuerError) -> Int64? {
        try storage("keep an app notification") {
            try database.transaction { tx in
                let inserted =
                    try tx.execute(
                        "INSERT OR IGNORE INTO app_inbox (message_id, notification, arrived_at_ms) VALUES (?, ?, ?)",
                        [notification.messageID, try notification.serializedBytes(), Int64(clamping: nowMs)]
                    ).changes == 1
                guard inserted else { return nil }
                let row = try tx.lastInsertRowID
                _ = try tx.execute(
                    "DELETE FROM app_inbox WHERE id <= (SELECT MAX(id) FROM app_inbox) - ?", [Int64(capacity)])
                if case .askCardholder(let body) = action {
                    try Self.insert(
                        IssuerAppInbox.asked(body, digitalCardID: notification.cardID, row: row, nowMs: nowMs), tx)
                }
                if let (digitalCardID, identity) = action.cardIdentity {
                    try Self.save(identity, of: digitalCardID, tx)
                }
                if let (id, status) = action.settledAuthn {
                    _ = try tx.execute(
                        """
                        UPDATE app_authn_requests SET status = ?, ends_at_ms = MIN(ends_at_ms, ?)
                        WHERE authn_request_id = ? AND status = ?
                        """, [status, Int64(clamping: nowMs), id, IssuerAppInbox.pending])
                }
                if let digitalCardID = action.deletedToken {
                    try Self.recordDeletedToken(digitalCardID, atMs: nowMs, tx)
                }
                if let digitalCardID = IssuerAppInbox.knownToken(notification) {
                    _ = try Self.forgetUnknownToken(digitalCardID, tx)
                }
                return row
            }
        }
    }

    /// Keeps a request; one already kept (a redelivery of its message under another id) stays as it is.
    private static func insert(_ kept: IssuerAppInbox.KeptAuthn, _ tx: Transaction) throws {
        _ = try tx.execute(
            """
            INSERT OR IGNORE INTO app_authn_requests (authn_request_id, inbox_row, amount_minor, currency, merchant,
                status, ends_at_ms, digital_card_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                kept.request.authnRequestID, kept.row, kept.request.amountMinor, kept.request.currency,
                kept.request.merchant, kept.request.status, Int64(clamping: kept.endsAtMs),
                kept.request.digitalCardID.isEmpty ? nil : kept.request.digitalCardID,
            ])
    }

    /// Replaces a digital card's card id, or forgets it (nil). A token recorded deleted keeps none: a renewal's
    /// message that came after the delete does not bring its card id back.
    private static func save(_ identity: IssuerV1.AppCardIdentity?, of digitalCardID: String, _ tx: Transaction) throws
    {
        guard let identity else {
            _ = try tx.execute("DELETE FROM app_card_ids WHERE digital_card_id = ?", [digitalCardID])
            return
        }
        _ = try tx.execute(
            """
            INSERT OR REPLACE INTO app_card_ids (digital_card_id, card_id, pan_last4, expiry)
            SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM deleted_tokens WHERE digital_card_id = ?1)
            """,
            [digitalCardID, identity.cardID, identity.panLast4, identity.expiry])
    }

    /// Forgets the card ids of tokens recorded deleted, which a database of an earlier build kept when the delete
    /// was learned other than by its CARD_STATE DEACTIVATED message; returns how many.
    @discardableResult
    func dropCardIDsOfDeletedTokens() throws(IssuerError) -> Int {
        try storage("forget the card ids of deleted tokens") {
            try database.execute(
                """
                DELETE FROM app_card_ids
                WHERE EXISTS (SELECT 1 FROM deleted_tokens x WHERE x.digital_card_id = app_card_ids.digital_card_id)
                """
            ).changes
        }
    }

    /// The kept messages, oldest first, each with its row and when it arrived (nil: kept before that was recorded).
    func appNotifications() throws(IssuerError) -> [IssuerAppInbox.KeptNotification] {
        try storage("read the app's notifications") {
            try Self.notifications(try database.query(Self.appNotificationsQuery))
        }
    }

    private static let appNotificationsQuery = "SELECT notification, id, arrived_at_ms FROM app_inbox ORDER BY id"

    private static func notifications(_ rows: [Row]) throws -> [IssuerAppInbox.KeptNotification] {
        try rows.map {
            IssuerAppInbox.KeptNotification(
                notification: try TspV1.Notification(serializedBytes: try $0.get(0, as: [UInt8].self)),
                row: try $0.int64(1),
                arrivedAtMs: try $0.isNull(2) ? nil : UInt64(max(0, try $0.int64(2))))
        }
    }

    /// Records the cardholder's answer, given at `nowMs`: the request has ended.
    func recordAuthnAnswer(_ authnRequestID: String, status: String, nowMs: UInt64) throws(IssuerError) {
        _ = try storage("record an authentication answer") {
            try database.execute(
                "UPDATE app_authn_requests SET status = ?, ends_at_ms = MIN(ends_at_ms, ?) WHERE authn_request_id = ?",
                [status, Int64(clamping: nowMs), authnRequestID])
        }
    }

    /// The kept authentication requests, in the order they were asked.
    func appAuthnRequests() throws(IssuerError) -> [IssuerAppInbox.KeptAuthn] {
        try storage("read the app's authentication requests") {
            try database.query(
                """
                SELECT authn_request_id, inbox_row, amount_minor, currency, merchant, status, ends_at_ms,
                    digital_card_id
                FROM app_authn_requests ORDER BY inbox_row
                """
            ).map { row in
                IssuerAppInbox.KeptAuthn(
                    request: IssuerV1.AppAuthn(
                        authnRequestID: try row.text(0), amountMinor: try row.int64(2), currency: try row.text(3),
                        merchant: try row.text(4), status: try row.text(5),
                        digitalCardID: try row.get(7, as: String?.self) ?? ""),
                    row: try row.int64(1), endsAtMs: UInt64(max(0, try row.int64(6))))
            }
        }
    }

    /// The card id of each digital card, by digital card id.
    func appCardIdentities() throws(IssuerError) -> [IssuerV1.AppCardIdentity] {
        try storage("read the app's card ids") {
            try database.query(
                "SELECT digital_card_id, card_id, pan_last4, expiry FROM app_card_ids ORDER BY digital_card_id"
            ).map {
                IssuerV1.AppCardIdentity(
                    digitalCardID: try $0.text(0), cardID: try $0.text(1), panLast4: try $0.text(2),
                    expiry: try $0.text(3))
            }
        }
    }

    /// Deletes the authentication requests that ended at or before `cutoffMs`; returns how many.
    @discardableResult
    func pruneAppAuthnRequests(endedAtOrBefore cutoffMs: UInt64) throws(IssuerError) -> Int {
        try storage("prune the app's authentication requests") {
            try database.execute(
                "DELETE FROM app_authn_requests WHERE ends_at_ms <= ?", [Int64(clamping: cutoffMs)]
            ).changes
        }
    }

    /// Once, for a database whose requests and card ids were kept only in its messages (before schema 10): derives
    /// them from the kept messages and answers (moved into the import's row by schema 11) as the app did, an answered
    /// request taken to have ended `nowMs`. Nothing to do afterwards. Returns how many requests and card ids it derived.
    @discardableResult
    func importAppInboxState(nowMs: UInt64) throws(IssuerError) -> (authn: Int, cardIDs: Int) {
        try storage("import the app's authentication requests") {
            try database.transaction { tx in
                guard try tx.queryOne("SELECT 1 FROM app_inbox_imports") != nil else { return (0, 0) }
                var inbox = IssuerAppInbox()
                for kept in try Self.notifications(try tx.query(Self.appNotificationsQuery)) {
                    _ = inbox.receive(kept.notification, row: kept.row, nowMs: nowMs, arriving: false)
                }
                let answers = try tx.query(
                    """
                    SELECT json_extract(a.value, '$[0]'), json_extract(a.value, '$[1]')
                    FROM app_inbox_imports i, json_each(i.authn_answers) a ORDER BY a.key
                    """)
                for answer in answers {
                    inbox.answered(try answer.text(0), status: try answer.text(1), nowMs: nowMs)
                }
                for kept in inbox.authn { try Self.insert(kept, tx) }
                for (digitalCardID, identity) in inbox.cardIdentities { try Self.save(identity, of: digitalCardID, tx) }
                _ = try tx.execute("DELETE FROM app_inbox_imports")
                return (inbox.authn.count, inbox.cardIdentities.count)
            }
        }
    }
}
