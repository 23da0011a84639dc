import TokenetCard
import TokenetStorage

/// How long the TSP keeps what it was given of a card beyond the token itself. The card's security code (CVV2) is
/// for the issuer's check of the card at digitization: once the issuer has decided, or a push receipt or session has
/// been redeemed (its card goes on into an eligibility receipt), the row's card data is sealed again without it. A
/// receipt, push receipt or session that expired unused is deleted an hour after its expiry (until then a late use is
/// told it expired, not that it is unknown).
extension TSPStore {
    /// Rows of one kind the sweep handles per call, so one sweep never holds the database for long.
    static let cardDataSweepBatch = 200
    /// How long an expired, unused receipt or session is kept: its late use is told "expired" meanwhile.
    static let expiredCardDataGraceMs: UInt64 = 3_600_000

    /// What one sweep did.
    struct CardDataSweep: Equatable {
        var securityCodesForgotten = 0
        var expiredDeleted = 0
    }

    /// Seals `card` again without its security code in the row `rowID` of `table` (keyed by `keyColumn`), in `tx`.
    func forgetSecurityCode(
        _ card: CardData, table: String, keyColumn: String, key: String, rowID: String, in tx: Transaction
    ) throws {
        var kept = card
        kept.cvv2 = nil
        _ = try tx.execute(
            "UPDATE \(table) SET card_data = ?, security_code_kept = 0 WHERE \(keyColumn) = ?",
            [try seal(kept, rowID: rowID), key])
    }

    /// Forgets the security codes no longer needed and deletes what expired unused, at most `limit` rows of each
    /// kind: the rows stored before codes were forgotten at use, and any a crash left between use and forgetting.
    func forgetSpentCardData(nowMs: UInt64, limit: Int = cardDataSweepBatch) throws -> CardDataSweep {
        try database.transaction { tx in
            var sweep = CardDataSweep()
            let spent: [(table: String, key: String, prefix: String, sql: String)] = [
                (
                    "eligibility_receipts", "receipt", "receipt:",
                    """
                    SELECT e.receipt, e.card_data FROM eligibility_receipts e
                    WHERE e.security_code_kept = 1 AND EXISTS (
                        SELECT 1 FROM digitize_requests d
                        WHERE d.receipt = e.receipt AND d.status = 'done')
                    LIMIT ?
                    """
                ),
                (
                    "push_receipts", "payload", "push-receipt:",
                    "SELECT payload, card_data FROM push_receipts WHERE security_code_kept = 1 AND used_at_ms IS NOT NULL LIMIT ?"
                ),
                (
                    "push_sessions", "id", "push-session:",
                    "SELECT id, card_data FROM push_sessions WHERE security_code_kept = 1 AND used_at_ms IS NOT NULL LIMIT ?"
                ),
            ]
            for kind in spent {
                for row in try tx.query(kind.sql, [limit]) {
                    let key = try row.text(0)
                    let card = try openCard(try row.blob(1), rowID: kind.prefix + key)
                    try forgetSecurityCode(
                        card, table: kind.table, keyColumn: kind.key, key: key, rowID: kind.prefix + key, in: tx)
                    sweep.securityCodesForgotten += 1
                }
            }
            let before = Int64(nowMs) - Int64(Self.expiredCardDataGraceMs)
            for (table, key, used) in [
                ("eligibility_receipts", "receipt", "used_by_request_id"), ("push_receipts", "payload", "used_at_ms"),
                ("push_sessions", "id", "used_at_ms"),
            ] {
                sweep.expiredDeleted += try tx.execute(
                    """
                    DELETE FROM \(table) WHERE \(key) IN (
                        SELECT \(key) FROM \(table) WHERE \(used) IS NULL AND expires_at_ms <= ? LIMIT ?)
                    """, [before, limit]
                ).changes
            }
            return sweep
        }
    }
}
