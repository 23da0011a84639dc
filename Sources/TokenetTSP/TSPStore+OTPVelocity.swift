import Foundation
import TokenetCard
import TokenetStorage

/// How many one-time codes one card gets a day. A token's own codes are bounded (`otp_max_resends`), but each time
/// the card is added again a new token brings new ones: someone holding the card's details could have the
/// cardholder sent codes without end, and keep guessing them. The count is per card (its PAN), across every token
/// and wallet, over the last 24 hours.
extension TSPStore {
    static let cardCodeWindowMs: UInt64 = 86_400_000

    /// Records a code about to be sent for `digitalCardID`, in the transaction that issues it; refused with
    /// RESOURCE_EXHAUSTED (and the transaction rolled back, so no code is issued) when the card had `limit` codes
    /// in the last 24 hours.
    func recordCodeSent(_ tx: Transaction, digitalCardID: String, limit: Int, nowMs: UInt64) throws {
        let since = Int64(nowMs) - Int64(Self.cardCodeWindowMs)
        _ = try tx.execute("DELETE FROM otp_sends WHERE sent_at_ms <= ?", [since])
        if limit < .max { try requireCodesLeft(tx, digitalCardID: digitalCardID, limit: limit, since: since) }
        _ = try tx.execute(
            "INSERT INTO otp_sends (digital_card_id, sent_at_ms) VALUES (?, ?)", [digitalCardID, Int64(nowMs)])
    }

    private func requireCodesLeft(_ tx: Transaction, digitalCardID: String, limit: Int, since: Int64) throws {
        let use = try cardCodeUse(tx, digitalCardID: digitalCardID, since: since)
        guard use.sent < limit else {
            throw TSPError(
                .resourceExhausted,
                "\(use.sent) one-time codes were sent for the card ending \(use.last4) in the last 24 hours, the most "
                    + "the TSP sends a card (otp_codes_per_card_per_day); the next can be sent after "
                    + "\(Self.nextCardCode(afterOldest: use.oldestMs).formatted(.iso8601)), or verify the cardholder "
                    + "with another method the issuer offered")
        }
    }

    /// Whether the card of `digitalCardID` may have another code now (fewer than `limit` in the last 24 hours).
    func cardHasCodesLeft(_ tx: Transaction, digitalCardID: String, limit: Int, nowMs: UInt64) throws -> Bool {
        guard limit < .max else { return true }
        let since = Int64(nowMs) - Int64(Self.cardCodeWindowMs)
        return try cardCodeUse(tx, digitalCardID: digitalCardID, since: since).sent < limit
    }

    /// When the card of `digitalCardID` has had `limit` codes in the last 24 hours, when it may have the next; nil
    /// while it has codes left. A token whose code is out is told so, not offered a resend or another method that
    /// the limit would refuse.
    func nextCardCodeAt(digitalCardID: String, limit: Int, nowMs: UInt64) throws -> Date? {
        guard limit < .max else { return nil }
        let since = Int64(nowMs) - Int64(Self.cardCodeWindowMs)
        return try database.transaction { tx in
            let use = try cardCodeUse(tx, digitalCardID: digitalCardID, since: since)
            return use.sent < limit ? nil : Self.nextCardCode(afterOldest: use.oldestMs)
        }
    }

    /// When a card whose oldest code of the window was sent at `oldestMs` may have the next: once that one leaves
    /// the 24-hour window.
    private static func nextCardCode(afterOldest oldestMs: Int64) -> Date {
        Date(timeIntervalSince1970: Double(oldestMs + Int64(cardCodeWindowMs)) / 1000)
    }

    /// The codes sent since `since` for the card of `digitalCardID`, across its tokens, and when the oldest of them
    /// was sent (`Int64.max` when none was: a limit is at least 1, so it is read only when one was).
    private func cardCodeUse(_ tx: Transaction, digitalCardID: String, since: Int64) throws
        -> (last4: String, sent: Int, oldestMs: Int64)
    {
        guard
            let row = try tx.queryOne(
                "SELECT pan_last4, funding_pan FROM tokens WHERE digital_card_id = ?", [digitalCardID])
        else { throw TSPError.unknownToken(digitalCardID) }
        let last4 = try row.text(0)
        let pan = try vault.openPAN(try row.get(1), recordID: digitalCardID)
        // The card's tokens are found by their last four digits, then compared whole: PANs are sealed.
        let tokens = try tx.query(
            """
            SELECT t.digital_card_id, t.funding_pan, COUNT(*), MIN(s.sent_at_ms)
            FROM otp_sends s JOIN tokens t ON t.digital_card_id = s.digital_card_id
            WHERE t.pan_last4 = ? AND s.sent_at_ms > ?
            GROUP BY t.digital_card_id
            """, [last4, since])
        var sent = 0
        var oldest = Int64.max
        for token in tokens where try vault.openPAN(try token.get(1), recordID: try token.text(0)) == pan {
            sent += try token.int(2)
            oldest = min(oldest, try token.int64(3))
        }
        return (last4, sent, oldest)
    }

    /// A code that could not be delivered does not count: the latest recorded for the token is taken back.
    func forgetCodeSent(_ tx: Transaction, digitalCardID: String) throws {
        _ = try tx.execute(
            """
            DELETE FROM otp_sends WHERE id = (
                SELECT id FROM otp_sends WHERE digital_card_id = ? ORDER BY id DESC LIMIT 1)
            """, [digitalCardID])
    }
}
