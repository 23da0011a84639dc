import Foundation
import TokenetNode
import TokenetStorage
import TokenetWire

/// The wallet's limited-use payment keys for one card.
public struct PaymentKeyCount: Sendable, Equatable {
    public var remaining: UInt32
    public var batches: UInt32
}

extension WalletStore {
    /// The messages the inbox keeps, the newest: a sandbox that ran for days of payments kept every push it was
    /// sent, without end. Far more than the broker ever sends again (a redelivered message is one of the few it has
    /// in flight), so telling a message processed before from a new one still works.
    public static let inboxCapacity = 10_000

    /// Keeps a notification from the broker once it has been processed; false when its id was kept before. The
    /// oldest beyond `capacity` go.
    public func keep(_ notification: TspV1.Notification, nowMs: UInt64, capacity: Int = inboxCapacity)
        throws(WalletError) -> Bool
    {
        try run("keep a notification") {
            try database.transaction { tx in
                let kept =
                    try tx.execute(
                        "INSERT OR IGNORE INTO inbox (message_id, received_at_ms, notification) VALUES (?, ?, ?)",
                        [notification.messageID, Int64(nowMs), try notification.serializedBytes()]
                    ).changes == 1
                if kept {
                    // Rows are numbered in the order kept, so the newest are the highest.
                    _ = try tx.execute(
                        "DELETE FROM inbox WHERE rowid <= (SELECT MAX(rowid) FROM inbox) - ?", [Int64(max(1, capacity))]
                    )
                }
                return kept
            }
        }
    }

    /// Whether a notification with this id was kept (processed) before.
    public func hasKept(messageID: String) throws(WalletError) -> Bool {
        try run("look a notification up") {
            try database.queryOne("SELECT 1 FROM inbox WHERE message_id = ?", [messageID]) != nil
        }
    }

    /// Every kept notification, oldest first (Inbox reads them in pages: `inboxPage`).
    public func inbox() throws(WalletError) -> [TspV1.Notification] {
        try inboxPage(afterRow: 0, limit: Int.max).map(\.notification)
    }

    /// Records a notified transaction once (a later notification of the same id replaces what it says: an AUTHN
    /// answer). The row stays, so the transaction keeps its place among those recorded at the same time and a
    /// listing under way (`transactionPage`) does not meet it twice.
    public func record(_ transaction: WalletV1.WalletTransaction) throws(WalletError) {
        _ = try run("record a transaction") {
            try database.execute(
                """
                INSERT INTO transactions (transaction_id, digital_card_id, amount_minor, currency,
                    merchant, approved, transaction_at_ms, last_call_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(transaction_id) DO UPDATE SET digital_card_id = excluded.digital_card_id,
                    amount_minor = excluded.amount_minor, currency = excluded.currency, merchant = excluded.merchant,
                    approved = excluded.approved, transaction_at_ms = excluded.transaction_at_ms,
                    last_call_ms = excluded.last_call_ms
                """,
                [
                    transaction.transactionID, transaction.digitalCardID, transaction.amountMinor,
                    transaction.currency, transaction.merchant, transaction.approved ? 1 : 0,
                    // The TSP's numbers: one past Int64's range trapped, and the redelivered message with it.
                    Int64(clamping: transaction.transactionAtMs), Int64(clamping: transaction.lastCallTimestampMs),
                ])
        }
    }

    public func paymentKeys(cardID: Int64) throws(WalletError) -> PaymentKeyCount {
        try run("read the payment keys") {
            guard
                let row = try database.queryOne(
                    "SELECT remaining, batches FROM payment_keys WHERE card_id = ?", [cardID])
            else { return PaymentKeyCount(remaining: 0, batches: 0) }
            // Sums of the TSP's batch sizes, which may pass UInt32's range.
            return PaymentKeyCount(
                remaining: UInt32(clamping: try row.int64(0)), batches: UInt32(clamping: try row.int64(1)))
        }
    }

    /// The digitized cards whose token is ACTIVE and that never had a batch of payment keys: activated while the
    /// wallet stopped or could not reach the TSP. The state is inside the stored answer, so SQL selects the cards
    /// without keys and the state is read here.
    public func activeCardsWithoutKeys() throws(WalletError) -> [WalletCardRecord] {
        try run("list the active cards without payment keys") {
            try database.query(
                """
                SELECT * FROM cards
                WHERE status = 'DIGITIZED' AND id NOT IN (SELECT card_id FROM payment_keys WHERE batches > 0)
                ORDER BY id
                """
            ).map(Self.record)
        }.filter { $0.result?.tokenState == .active }
    }

    /// The digitized cards whose token is ACTIVE, that had a batch of payment keys and have `threshold` or fewer
    /// left: a refill a payment asked for failed (the TSP away, or slow past the payment's wait).
    public func activeCardsLowOnKeys(threshold: UInt32) throws(WalletError) -> [WalletCardRecord] {
        try run("list the active cards low on payment keys") {
            try database.query(
                """
                SELECT * FROM cards
                WHERE status = 'DIGITIZED'
                    AND id IN (SELECT card_id FROM payment_keys WHERE batches > 0 AND remaining <= ?)
                ORDER BY id
                """, [Int64(threshold)]
            ).map(Self.record)
        }.filter { $0.result?.tokenState == .active }
    }

    /// The id of the card's key-batch request: the one still on its way (its batch not recorded yet: its answer was
    /// lost, or the wallet stopped first), or a new one, stored before the request is sent.
    public func keyRequestID(cardID: Int64) throws(WalletError) -> String {
        try run("keep the key batch request's id") {
            try database.transaction { tx in
                if let row = try tx.queryOne(
                    "SELECT pending_request_id FROM payment_keys WHERE card_id = ? AND pending_request_id IS NOT NULL",
                    [cardID])
                {
                    return try row.text(0)
                }
                let id = IdentifierRules.newID()
                _ = try tx.execute(
                    """
                    INSERT INTO payment_keys (card_id, remaining, batches, pending_request_id) VALUES (?, 0, 0, ?)
                    ON CONFLICT(card_id) DO UPDATE SET pending_request_id = excluded.pending_request_id
                    """, [cardID, id])
                return id
            }
        }
    }

    /// Adds the batch that answered the request `requestID` and forgets that id, once: nil, adding nothing, when that
    /// request is no longer on its way (another request that carried its id recorded the batch).
    public func recordKeyBatch(cardID: Int64, count: UInt32, requestID: String) throws(WalletError)
        -> PaymentKeyCount?
    {
        let changed = try run("store a batch of payment keys") {
            try database.execute(
                """
                UPDATE payment_keys SET remaining = remaining + ?, batches = batches + 1, pending_request_id = NULL
                WHERE card_id = ? AND pending_request_id = ?
                """, [Int64(count), cardID, requestID])
        }
        return changed.changes == 1 ? try paymentKeys(cardID: cardID) : nil
    }

    /// Adds a batch of keys.
    public func addPaymentKeys(cardID: Int64, count: UInt32) throws(WalletError) -> PaymentKeyCount {
        try run("store a batch of payment keys") {
            _ = try database.execute(
                """
                INSERT INTO payment_keys (card_id, remaining, batches) VALUES (?, ?, 1)
                ON CONFLICT(card_id) DO UPDATE SET remaining = remaining + excluded.remaining,
                    batches = batches + 1
                """, [cardID, Int64(count)])
        }
        return try paymentKeys(cardID: cardID)
    }

    /// Spends one key; nil when none is left.
    public func usePaymentKey(cardID: Int64) throws(WalletError) -> PaymentKeyCount? {
        let changed = try run("spend a payment key") {
            try database.execute(
                "UPDATE payment_keys SET remaining = remaining - 1 WHERE card_id = ? AND remaining > 0", [cardID])
        }
        return changed.changes == 1 ? try paymentKeys(cardID: cardID) : nil
    }
}
