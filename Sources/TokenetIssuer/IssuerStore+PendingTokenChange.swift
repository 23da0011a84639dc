import TokenetStorage
import TokenetWire

/// The change of every token of a card that went with its block or opening (`SetCardStatus`), kept with the card
/// until the TSP has answered it for each token. Without it, a node stopped while the TSP held the call, or a TSP
/// that did not answer, left a card blocked as stolen whose tokens still paid, and nothing said so.
struct PendingTokenChange: Sendable, Equatable {
    /// SUSPEND (a token waiting for ID&V is deleted instead), DELETE or RESUME.
    var action: TspV1.LifecycleAction
    var reasonCode: String
    var sinceMs: UInt64

    /// The action as a word: suspend, delete or resume.
    var actionName: String { Self.name(of: action) }

    static func name(of action: TspV1.LifecycleAction) -> String {
        switch action {
        case .suspend: "suspend"
        case .delete: "delete"
        case .resume: "resume"
        default: "action \(action.rawValue)"
        }
    }

    var message: IssuerV1.PendingTokenChange {
        IssuerV1.PendingTokenChange(action: action, reasonCode: reasonCode, sinceMs: sinceMs)
    }
}

extension IssuerStore {
    /// Records card `cardID` blocked (with `reason`) or open (nil), and the change of its tokens that goes with it,
    /// in one transaction: `tokens` replaces any change still pending (nil drops it, as opening a card and keeping
    /// its tokens as they are drops a suspension not yet made). Whether the card's status changed.
    func setBlocked(cardID: String, reason: String?, atMs: UInt64, tokens: PendingTokenChange?)
        throws(IssuerError) -> Bool
    {
        try storage("record the card's block") {
            try database.transaction { tx in
                let changed =
                    try tx.execute(
                        """
                        UPDATE cards SET blocked_reason = ?, blocked_at_ms = ?
                        WHERE id = ? AND blocked_reason IS NOT ?
                        """, [reason, reason == nil ? nil : Int64(atMs), cardID, reason]
                    ).changes > 0
                _ = try tx.execute(
                    """
                    UPDATE cards SET pending_tokens_action = ?, pending_tokens_reason = ?, pending_tokens_since_ms = ?
                    WHERE id = ?
                    """,
                    [
                        tokens.map { Int64($0.action.rawValue) }, tokens?.reasonCode,
                        tokens.map { Int64(clamping: $0.sinceMs) }, cardID,
                    ])
                return changed
            }
        }
    }

    /// Drops card `cardID`'s pending change of its tokens once the TSP has settled it, unless another has taken its
    /// place meanwhile (a later block or opening, whose own calls settle it). Whether it was dropped.
    @discardableResult
    func settlePendingTokenChange(cardID: String, _ change: PendingTokenChange) throws(IssuerError) -> Bool {
        try storage("settle the pending change of a card's tokens") {
            try database.execute(
                """
                UPDATE cards SET pending_tokens_action = NULL, pending_tokens_reason = NULL,
                    pending_tokens_since_ms = NULL
                WHERE id = ? AND pending_tokens_action = ? AND pending_tokens_reason = ?
                    AND pending_tokens_since_ms = ?
                """,
                [cardID, Int64(change.action.rawValue), change.reasonCode, Int64(clamping: change.sinceMs)]
            ).changes > 0
        }
    }

    /// Card `cardID`'s pending change of its tokens, read afresh: a list read earlier may hold one a newer block or
    /// opening of the card has since replaced or made.
    func pendingTokenChange(ofCard cardID: String) throws(IssuerError) -> PendingTokenChange? {
        let row = try storage("read a card's pending token change") {
            try database.queryOne(
                """
                SELECT pending_tokens_action, pending_tokens_reason, pending_tokens_since_ms FROM cards WHERE id = ?
                """, [cardID])
        }
        return try row.flatMap { row throws(IssuerError) in try pendingTokenChange(row) }
    }

    /// Every card with a change of its tokens still pending, in the order of their ids.
    func pendingTokenChanges() throws(IssuerError) -> [(cardID: String, change: PendingTokenChange)] {
        let rows = try storage("list the pending changes of cards' tokens") {
            try database.query(
                """
                SELECT id, pending_tokens_action, pending_tokens_reason, pending_tokens_since_ms FROM cards
                WHERE pending_tokens_action IS NOT NULL ORDER BY id
                """)
        }
        var changes: [(cardID: String, change: PendingTokenChange)] = []
        for row in rows {
            let id = try storage("read a card's pending token change") { try row.text("id") }
            guard let change = try pendingTokenChange(row) else { continue }
            changes.append((id, change))
        }
        return changes
    }

    /// The pending change of a card's tokens in `row` (a row of `cards`), or nil when it has none.
    func pendingTokenChange(_ row: Row) throws(IssuerError) -> PendingTokenChange? {
        try storage("read a card's pending token change") {
            guard let action = try row.get("pending_tokens_action", as: Int64?.self) else { return nil }
            return PendingTokenChange(
                action: TspV1.LifecycleAction(rawValue: Int32(clamping: action)),
                reasonCode: try row.get("pending_tokens_reason", as: String?.self) ?? "",
                sinceMs: UInt64(clamping: try row.get("pending_tokens_since_ms", as: Int64?.self) ?? 0))
        }
    }

    /// Schema 25: the pending change of a card's tokens (`PendingTokenChange`).
    static let pendingTokenChangeSchema = """
        ALTER TABLE cards ADD COLUMN pending_tokens_action INTEGER;
        ALTER TABLE cards ADD COLUMN pending_tokens_reason TEXT;
        ALTER TABLE cards ADD COLUMN pending_tokens_since_ms INTEGER;
        """
}
