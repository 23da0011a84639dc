import TokenetStorage
import TokenetWire

/// A database from before `deleted_tokens` (schema 9) learned of deleted tokens only through the CARD_STATE
/// DEACTIVATED messages its app kept, so its renewals and card-wide token changes still sent those tokens to the
/// TSP. Of that history the issuer still has only the messages its app keeps (the newest `IssuerAppInbox.capacity`),
/// so the first start after schema 15 records the tokens those name, once; older messages are gone, and the TSP still
/// answers such a token as deleted the next time it is sent, which records it then.
extension IssuerStore {
    /// The row asks for the back-fill; a new database has no kept messages, so its back-fill finds nothing.
    static let deletedTokensBackfillSchema = """
        CREATE TABLE deleted_tokens_backfills (singleton INTEGER PRIMARY KEY CHECK (singleton = 1));
        INSERT INTO deleted_tokens_backfills (singleton) VALUES (1);
        """

    /// Once: records as deleted every token a kept CARD_STATE DEACTIVATED message names (as the app records one when
    /// it arrives, `IssuerAppInbox.Action.deletedToken`), learned when the message was published (at `nowMs` when
    /// the broker did not say). Nothing to do afterwards. Returns how many tokens it recorded.
    @discardableResult
    func backfillDeletedTokens(nowMs: UInt64) throws(IssuerError) -> Int {
        try storage("record the deleted tokens named by the app's kept messages") {
            try database.transaction { tx in
                guard try tx.queryOne("SELECT 1 FROM deleted_tokens_backfills") != nil else { return 0 }
                var recorded = 0
                for row in try tx.query("SELECT notification FROM app_inbox ORDER BY id") {
                    let notification = try TspV1.Notification(serializedBytes: try row.get(0, as: [UInt8].self))
                    guard let id = IssuerAppInbox.classify(notification).1.deletedToken else { continue }
                    let atMs = notification.publishedAtMs != 0 ? notification.publishedAtMs : nowMs
                    recorded +=
                        try tx.execute(
                            "INSERT OR IGNORE INTO deleted_tokens (digital_card_id, learned_at_ms) VALUES (?, ?)",
                            [id, Int64(clamping: atMs)]
                        ).changes
                }
                _ = try tx.execute("DELETE FROM deleted_tokens_backfills")
                return recorded
            }
        }
    }
}
