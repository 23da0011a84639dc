import TokenetNode
import TokenetStorage
import TokenetWire

/// The pages of the wallet's lists (`ListCards`, `ListTransactions`, `Inbox`, `CurrentTokens`), each read through
/// the table or an index in its order from where the previous page ended (`PageRequest+Rows`), so a page costs the
/// same however many rows come before it.
extension WalletStore {
    /// Up to `limit` cards after the card whose id is `afterRow` (0 for the first), in the order they were added.
    public func cardPage(afterRow: Int64, limit: Int) throws(WalletError) -> [WalletCardRecord] {
        try run("list the cards") {
            try database.query(Self.cardPageQuery, [afterRow, Int64(limit)]).map(Self.record)
        }
    }

    static let cardPageQuery = "SELECT * FROM cards WHERE id > ? ORDER BY id LIMIT ?"

    /// Up to `limit` digitized cards whose issuer app is the node `issuerNodeID` (`WalletCardRecord.belongs`), after
    /// the card whose id is `afterRow` (0 for the first), in the order they were added.
    public func issuerCardPage(
        issuerNodeID: String, afterRow: Int64, limit: Int
    ) throws(WalletError) -> [WalletCardRecord] {
        try run("list the issuer's cards") {
            try database.query(Self.issuerCardPageQuery, [issuerNodeID, afterRow, Int64(limit)]).map(Self.record)
        }
    }

    static let issuerCardPageQuery = """
        SELECT * FROM cards WHERE issuer_node_id = ? AND status = 'DIGITIZED' AND id > ? ORDER BY id LIMIT ?
        """

    /// Up to `limit` kept notifications after the row `afterRow` (0 for the first), oldest first, each with its row.
    public func inboxPage(
        afterRow: Int64, limit: Int
    ) throws(WalletError) -> [(notification: TspV1.Notification, row: Int64)] {
        try run("read the inbox") {
            try database.query(Self.inboxPageQuery, [afterRow, Int64(limit)]).map {
                (try TspV1.Notification(serializedBytes: try $0.get(0, as: [UInt8].self)), try $0.int64(1))
            }
        }
    }

    static let inboxPageQuery = "SELECT notification, rowid FROM inbox WHERE rowid > ? ORDER BY rowid LIMIT ?"

    /// Up to `limit` transactions of one digital card or of every card, in the order of their time (ties in the
    /// order they were recorded), after the place `after` (`PageRequest.afterTime`), each with its page key in the
    /// listing `listing`.
    public func transactionPage(
        digitalCardID: String?, listing: String, after: (ms: Int64, row: Int64), limit: Int
    ) throws(WalletError) -> [(transaction: WalletV1.WalletTransaction, pageKey: String)] {
        try run("list transactions") {
            let parameters: [any SQLValueConvertible] =
                (digitalCardID.map { [$0] } ?? []) + [after.ms, after.row, Int64(limit)]
            let rows = try database.query(Self.transactionPageQuery(oneCard: digitalCardID != nil), parameters)
            return try rows.map { row in
                let transaction = WalletV1.WalletTransaction(
                    transactionID: try row.text(0), digitalCardID: try row.text(1), amountMinor: try row.int64(2),
                    currency: try row.text(3), merchant: try row.text(4), approved: try row.int64(5) != 0,
                    transactionAtMs: UInt64(try row.int64(6)), lastCallTimestampMs: UInt64(try row.int64(7)))
                return (transaction, PageRequest.key(in: listing, ms: try row.int64(6), row: try row.int64(8)))
            }
        }
    }

    /// The query of a `ListTransactions` page: parameters are the digital card id (for one card), the time and row
    /// id the page starts after, and the number of rows. Each reads through an index in its order (migration 5).
    static func transactionPageQuery(oneCard: Bool) -> String {
        """
        SELECT transaction_id, digital_card_id, amount_minor, currency, merchant, approved, transaction_at_ms,
            last_call_ms, rowid
        FROM transactions
        WHERE \(oneCard ? "digital_card_id = ? AND " : "")(transaction_at_ms, rowid) > (?, ?)
        ORDER BY transaction_at_ms, rowid LIMIT ?
        """
    }
}
