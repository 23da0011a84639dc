import Foundation
import TokenetCard
import TokenetStorage

extension IssuerStore {
    /// Marks the cards renewed at run time, whose number and expiry a fixture loaded at a later start must not
    /// reset: the TSP moved their tokens onto the renewed card, so going back to the fixture's values would leave
    /// the issuer refusing (as "expiry does not match") the card its own tokens stand for.
    static let renewalSchema = """
        ALTER TABLE cards ADD COLUMN renewed INTEGER NOT NULL DEFAULT 0;
        """

    /// The numbers and expiries cards had before a renewal, sealed as the card's own (under its record id): a
    /// token the TSP's stand-in made while the issuer was away may name a card by one (STAND_IN_ADVICE), and it is
    /// still that card's token.
    static let previousNumbersSchema = """
        CREATE TABLE previous_numbers (
            card_id TEXT NOT NULL REFERENCES cards(id), last4 TEXT NOT NULL, pan_sealed BLOB NOT NULL,
            expiry TEXT NOT NULL, retired_at_ms INTEGER NOT NULL);
        CREATE INDEX previous_numbers_by_last4 ON previous_numbers(last4);
        """

    /// The card that had `pan` before a renewal, the latest to give it up; nil when none did.
    func card(thatHad pan: PAN) throws(IssuerError) -> StoredCard? {
        let id = try storage("look up a card by a previous number") {
            try database.transaction { tx in try cardID(thatHad: pan, besides: nil, in: tx) }
        }
        guard let id else { return nil }
        return try card(id: id)
    }

    /// The card, as it is now, that `pan` and `expiry` described before a renewal: the card with `pan` now, whose
    /// expiry changed from `expiry` (`current`, looked up by the number), or the card that gave `pan` up. Nil when
    /// they are no card's earlier details. Card data taken before a renewal (a digitization left pending, a push
    /// session or receipt made before it) was declined for an expiry that "does not match", which blamed the
    /// cardholder's typing for the issuer's own renewal.
    ///
    /// The earlier expiry must match too: a number alone, which anyone who saw the old card holds, is no one's
    /// earlier details.
    func renewedCard(
        describedBefore pan: PAN, expiry: CardExpiry?, current: StoredCard?
    ) throws(IssuerError) -> StoredCard? {
        guard let expiry else { return nil }
        guard let current else { return try card(thatHad: pan, expiry: expiry) }
        guard expiry != current.expiry else { return nil }
        let had = try storage("look up the earlier expiries of card \(current.id)") {
            for row in try database.query(
                "SELECT pan_sealed, expiry FROM previous_numbers WHERE card_id = ? AND last4 = ?",
                [current.id, pan.last4])
            where (try? CardExpiry(parsing: try row.text(1))) == expiry {
                if try vault.openPAN(try row.blob(0), recordID: "card:\(current.id)") == pan { return true }
            }
            return false
        }
        return had ? current : nil
    }

    /// The card that gave up `pan` in a renewal while its expiry was `expiry`, the latest to; nil when none did.
    private func card(thatHad pan: PAN, expiry: CardExpiry) throws(IssuerError) -> StoredCard? {
        let id = try storage("look up a card by its earlier details") { () -> String? in
            let rows = try database.query(
                "SELECT card_id, pan_sealed, expiry FROM previous_numbers WHERE last4 = ? ORDER BY rowid DESC",
                [pan.last4])
            for row in rows where (try? CardExpiry(parsing: try row.text(2))) == expiry {
                let id = try row.text(0)
                if try vault.openPAN(try row.blob(1), recordID: "card:\(id)") == pan { return id }
            }
            return nil
        }
        guard let id else { return nil }
        return try card(id: id)
    }

    /// The id of the card, other than `besides`, that last gave up `pan` in a renewal.
    private func cardID(thatHad pan: PAN, besides: String?, in tx: Transaction) throws -> String? {
        let rows = try tx.query(
            "SELECT card_id, pan_sealed FROM previous_numbers WHERE last4 = ? AND card_id != ? ORDER BY rowid DESC",
            [pan.last4, besides ?? ""])
        for row in rows {
            let id = try row.text(0)
            if try vault.openPAN(try row.blob(1), recordID: "card:\(id)") == pan { return id }
        }
        return nil
    }

    /// A renewal reserved but not yet settled with the TSP (`PendingRenewal`): the new number (sealed like the card's
    /// own, under the card's record id, so completing moves it as it is) and expiry. `pending_last4` is indexed
    /// like `last4`, as the uniqueness check looks for a number in both.
    static let pendingRenewalSchema = """
        ALTER TABLE cards ADD COLUMN pending_pan_sealed BLOB;
        ALTER TABLE cards ADD COLUMN pending_last4 TEXT;
        ALTER TABLE cards ADD COLUMN pending_expiry TEXT;
        CREATE INDEX cards_by_pending_last4 ON cards(pending_last4);
        """

    /// When a pending renewal was reserved (ms since the epoch), so an operator listing the cards can tell a renewal
    /// whose TSP answer was just lost from one left pending for days. Kept when the renewal is repeated.
    static let pendingRenewalTimeSchema = """
        ALTER TABLE cards ADD COLUMN pending_since_ms INTEGER;
        """

    /// The tokens the issuer knows to be deleted at the TSP (its own delete answered, the TSP answering a token as
    /// DEACTIVATED, a state no token leaves, or the TSP's CARD_STATE DEACTIVATED message to the issuer app):
    /// card-wide token changes and renewals leave them out.
    static let deletedTokensSchema = """
        CREATE TABLE deleted_tokens (digital_card_id TEXT PRIMARY KEY, learned_at_ms INTEGER NOT NULL);
        """

    /// Replaces a card's number and/or expiry at once (the card keeps its id): a renewal with no tokens at the TSP,
    /// so nothing else has to agree. The same checks as `reserveRenewal`.
    func renewCard(id: String, pan: PAN, expiry: CardExpiry, at date: Date = Date()) throws(IssuerError) {
        _ = try reserveRenewal(id: id, pan: pan, expiry: expiry, at: date)
        try settleRenewal(id: id, PendingRenewal(pan: pan, expiry: expiry), .complete)
    }

    /// Reserves a card's new number and expiry as its pending renewal, before the TSP is told, and says whether this
    /// was a new reservation or the same renewal pending from an attempt whose TSP answer was lost.
    ///
    /// The checks on a new number are made in the transaction that reserves it: a number outside the issuer's BIN
    /// ranges is not the issuer's to give (the TSP would route its tokens elsewhere), and a number another card
    /// carries or has reserved would leave the issuer unable to tell the two cards apart (it decides on a card by
    /// its number). So of two renewals racing for one number exactly one reserves it, and the other is refused
    /// before the TSP hears of it.
    func reserveRenewal(id: String, pan: PAN, expiry: CardExpiry, at date: Date = Date()) throws(IssuerError)
        -> RenewalPlan
    {
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(pan, recordID: "card:\(id)")
        } catch {
            throw IssuerError(.keys, "cannot seal the renewed card \(id)", cause: error)
        }
        let requested = PendingRenewal(pan: pan, expiry: expiry)
        return try storage("reserve the renewal of card \(id)") {
            try database.transaction { tx in
                guard let row = try tx.queryOne("SELECT pan_sealed FROM cards WHERE id = ?", [id]) else {
                    throw IssuerError(.notFound, "the issuer has no card \"\(id)\"")
                }
                let current = try vault.openPAN(try row.blob(0), recordID: "card:\(id)")
                let plan = RenewalPlan(pending: try pendingRenewal(ofCard: id, in: tx), requested: requested)
                switch plan {
                case .resume: return plan
                case .refuse(let other):
                    throw IssuerError(
                        .failedPrecondition,
                        "card \(id) has a renewal to the number ending \(other.pan.last4), \(other.expiry), waiting "
                            + "for the TSP's answer; repeat that renewal to complete it before renewing the card again")
                case .reserve: break
                }
                if pan != current {
                    if let refusal = try binRangeRefusal(pan, in: tx) {
                        throw IssuerError(.invalidArgument, refusal)
                    }
                    if let (other, pending) = try otherCard(carrying: pan, besides: id, in: tx) {
                        throw IssuerError(.alreadyExists, Self.numberInUse(pan, by: other, pending: pending))
                    }
                    // A number another card gave up in a renewal: a token the TSP's stand-in made from it is still
                    // that card's (`card(thatHad:)`), so it is not given to another.
                    if let other = try cardID(thatHad: pan, besides: id, in: tx) {
                        throw IssuerError(
                            .alreadyExists,
                            "the card number ending \(pan.last4) was card \(other)'s before a renewal; a renewed card "
                                + "needs a number no other card has had")
                    }
                }
                _ = try tx.execute(
                    """
                    UPDATE cards SET pending_pan_sealed = ?, pending_last4 = ?, pending_expiry = ?,
                        pending_since_ms = ?
                    WHERE id = ?
                    """, [sealed, pan.last4, expiry.description, Int64(date.timeIntervalSince1970 * 1000), id])
                return plan
            }
        }
    }

    /// Settles the pending renewal `renewal` of card `id` as the TSP's answer decided: the card takes the reserved
    /// number and expiry (`complete`, marking it `renewed`), or the reservation is dropped (`release`). A card whose
    /// pending renewal is not `renewal` is refused, so a settlement never applies to a renewal it did not send.
    func settleRenewal(id: String, _ renewal: PendingRenewal, _ settlement: RenewalSettlement) throws(IssuerError) {
        guard settlement != .keepPending else { return }
        try storage("settle the renewal of card \(id)") {
            try database.transaction { tx in
                guard try pendingRenewal(ofCard: id, in: tx) == renewal else {
                    throw IssuerError(
                        .failedPrecondition,
                        "card \(id) has no pending renewal to the number ending \(renewal.pan.last4), \(renewal.expiry)"
                    )
                }
                if settlement == .complete {
                    // The number and expiry the card leaves, sealed as they were (`previousNumbersSchema`).
                    _ = try tx.execute(
                        """
                        INSERT INTO previous_numbers (card_id, last4, pan_sealed, expiry, retired_at_ms)
                        SELECT id, last4, pan_sealed, expiry, ? FROM cards WHERE id = ?
                        """, [Int64(Date().timeIntervalSince1970 * 1000), id])
                    _ = try tx.execute(
                        """
                        UPDATE cards SET pan_sealed = pending_pan_sealed, last4 = pending_last4, scheme = ?,
                            expiry = pending_expiry, renewed = 1
                        WHERE id = ?
                        """, [renewal.pan.scheme.rawValue, id])
                }
                _ = try tx.execute(
                    """
                    UPDATE cards SET pending_pan_sealed = NULL, pending_last4 = NULL, pending_expiry = NULL,
                        pending_since_ms = NULL
                    WHERE id = ?
                    """, [id])
            }
        }
    }

    /// The renewal of card `id` waiting for the TSP's answer, if any.
    func pendingRenewal(ofCard id: String) throws(IssuerError) -> PendingRenewal? {
        try storage("read the pending renewal of card \(id)") {
            try database.transaction { tx in try pendingRenewal(ofCard: id, in: tx) }
        }
    }

    private func pendingRenewal(ofCard id: String, in tx: Transaction) throws -> PendingRenewal? {
        guard
            let row = try tx.queryOne(
                "SELECT pending_pan_sealed, pending_expiry FROM cards WHERE id = ? AND pending_pan_sealed IS NOT NULL",
                [id])
        else { return nil }
        return PendingRenewal(
            pan: try vault.openPAN(try row.blob(0), recordID: "card:\(id)"),
            expiry: try CardExpiry(parsing: try row.text(1)))
    }

    /// Why `pan` is not the issuer's to give, or nil when it is inside one of the BIN ranges of the issuer's profile
    /// (or no fixture has declared any yet). The number is named by its last four digits only.
    private func binRangeRefusal(_ pan: PAN, in tx: Transaction) throws -> String? {
        guard let row = try tx.queryOne("SELECT bin_ranges FROM issuer_profile WHERE singleton = 1") else {
            return nil
        }
        let ranges = try JSONDecoder().decode([IssuerFixture.BINRange].self, from: Data(try row.text(0).utf8))
        guard !ranges.contains(where: { $0.contains(pan.digits) }) else { return nil }
        return "the card number ending \(pan.last4) is outside the issuer's BIN ranges ("
            + ranges.map { "\($0.low)-\($0.high)" }.joined(separator: ", ") + ")"
    }

    /// The id of a card other than `id` whose number, or whose pending renewal's number (`pending`), is `pan`.
    /// Numbers are sealed, so the cards sharing the last four digits are opened and compared.
    private func otherCard(carrying pan: PAN, besides id: String, in tx: Transaction) throws -> (String, pending: Bool)?
    {
        let rows = try tx.query(
            """
            SELECT id, pan_sealed, 0 FROM cards WHERE last4 = ? AND id != ?
            UNION ALL SELECT id, pending_pan_sealed, 1 FROM cards WHERE pending_last4 = ? AND id != ?
            """, [pan.last4, id, pan.last4, id])
        for row in rows {
            let other = try row.text(0)
            if try vault.openPAN(try row.blob(1), recordID: "card:\(other)") == pan {
                return (other, try row.int64(2) != 0)
            }
        }
        return nil
    }

    /// The refusal of a number already in use, or held by another card's renewal still `pending` (it was said to be
    /// that card's own, which it is not yet), masked to its last four digits like every message the issuer gives.
    static func numberInUse(_ pan: PAN, by cardID: String, pending: Bool = false) -> String {
        let holder =
            pending
            ? "is held by card \(cardID)'s renewal, which waits for the TSP's answer (repeat or abandon it to settle it)"
            : "is already used by card \(cardID)"
        return "the card number ending \(pan.last4) \(holder); a renewed card needs a number of its own"
    }

    /// Records `ids` as deleted at the TSP (`deletedTokensSchema`); a token recorded already keeps its first time.
    /// Returns those recorded now, in order.
    @discardableResult
    func recordDeletedTokens(_ ids: [String], at date: Date = Date()) throws(IssuerError) -> [String] {
        guard !ids.isEmpty else { return [] }
        return try storage("record \(ids.count) deleted token(s)") {
            try database.transaction { tx in
                try ids.filter { id in
                    try Self.recordDeletedToken(id, atMs: UInt64(max(0, date.timeIntervalSince1970 * 1000)), tx)
                }
            }
        }
    }

    /// Records one token as deleted at the TSP, in `tx`; a token recorded already keeps its first time. Returns
    /// whether it was recorded now. The app's card id of the token goes with it, however the issuer learned of the
    /// delete: its CARD_STATE DEACTIVATED message, the check with the TSP when the broker's retention dropped that
    /// message, or the TSP's answer to a change naming the token.
    @discardableResult
    static func recordDeletedToken(_ id: String, atMs: UInt64, _ tx: Transaction) throws -> Bool {
        _ = try tx.execute("DELETE FROM app_card_ids WHERE digital_card_id = ?", [id])
        return try tx.execute(
            "INSERT OR IGNORE INTO deleted_tokens (digital_card_id, learned_at_ms) VALUES (?, ?)",
            [id, Int64(clamping: atMs)]
        ).changes > 0
    }

    /// The tokens recorded deleted after row `afterRow` of `deleted_tokens`, oldest first, and the last row read
    /// (`afterRow` when there is none): rows are only added, so a reader that keeps its last row sees each once.
    func deletedTokens(after afterRow: Int64) throws(IssuerError) -> (ids: [String], lastRow: Int64) {
        try storage("read the deleted tokens") {
            var ids: [String] = []
            var lastRow = afterRow
            for row in try database.query(
                "SELECT rowid, digital_card_id FROM deleted_tokens WHERE rowid > ? ORDER BY rowid", [afterRow])
            {
                lastRow = try row.int64(0)
                ids.append(try row.text(1))
            }
            return (ids, lastRow)
        }
    }

    /// The last row of `deleted_tokens`; 0 when it has none.
    func lastDeletedTokenRow() throws(IssuerError) -> Int64 {
        try storage("read the deleted tokens") {
            try database.queryOne("SELECT COALESCE(MAX(rowid), 0) FROM deleted_tokens")?.int64(0) ?? 0
        }
    }

    /// Whether `id` is recorded as deleted at the TSP.
    func isDeleted(_ id: String) throws(IssuerError) -> Bool {
        try storage("read the deleted tokens") {
            try database.queryOne("SELECT 1 FROM deleted_tokens WHERE digital_card_id = ?", [id]) != nil
        }
    }

    /// The decisions of a token, newest last, and those of a card: `lastDecisionNotDeclined` looks up a token's
    /// latest decision for every decision row of a card, which without these scanned the whole table each time.
    static let decisionIndexesSchema = """
        CREATE INDEX decisions_by_token ON decisions(digital_card_id, id);
        CREATE INDEX decisions_by_card ON decisions(card_id);
        """

    /// Whether the decision that stands for the token of decision row `d` let it be made: the TSP's stand-in's,
    /// when it decided (it told the issuer with STAND_IN_ADVICE, and an answer of the issuer's own reached the TSP too
    /// late, whichever was recorded first), or else the issuer's latest. A digitization the TSP resumed after a crash
    /// asks again, and a second answer (a decline, the card having been renewed meanwhile) is the one the TSP
    /// recorded: the first approval kept the token among the card's live ones, and card-wide changes failed on it.
    static let lastDecisionNotDeclined = """
        COALESCE(
            (SELECT s.decision FROM decisions s WHERE s.digital_card_id = d.digital_card_id AND s.rule = 'stand-in'
             ORDER BY s.id DESC LIMIT 1),
            (SELECT l.decision FROM decisions l WHERE l.digital_card_id = d.digital_card_id
             ORDER BY l.id DESC LIMIT 1)
        ) != 'DECLINED'
        """

    /// The tokens of card `id` (`digitalCardIDs(ofCard:)`), split into those the issuer does not know to be gone,
    /// those it knows deleted, and those the TSP answered it does not know (`unknownTokensSchema`; a token both
    /// counts as deleted), each oldest first. A token the TSP's stand-in declined (STAND_IN_ADVICE) is none of them,
    /// whatever the issuer decided itself: its answer reached the TSP too late, and the token was never live.
    func tokens(ofCard id: String) throws(IssuerError) -> (live: [String], deleted: [String], unknown: [String]) {
        let rows = try storage("list the tokens of card \(id)") {
            try database.query(
                """
                SELECT d.digital_card_id, x.digital_card_id IS NOT NULL, u.digital_card_id IS NOT NULL FROM decisions d
                LEFT JOIN deleted_tokens x ON x.digital_card_id = d.digital_card_id
                LEFT JOIN unknown_tokens u ON u.digital_card_id = d.digital_card_id
                WHERE d.card_id = ? AND d.digital_card_id != '' AND \(Self.lastDecisionNotDeclined)
                GROUP BY d.digital_card_id ORDER BY MIN(d.id)
                """, [id]
            ).map { (id: try $0.text(0), deleted: try $0.int64(1) != 0, unknown: try $0.int64(2) != 0) }
        }
        return (
            rows.filter { !$0.deleted && !$0.unknown }.map(\.id), rows.filter(\.deleted).map(\.id),
            rows.filter { $0.unknown && !$0.deleted }.map(\.id)
        )
    }

    /// Which of `ids` the issuer counts among its cards' tokens and has not recorded deleted: a decision of its
    /// own or its stand-in's let the TSP make the token (`lastDecisionNotDeclined`). In the order given.
    func countedTokens(among ids: [String]) throws(IssuerError) -> [String] {
        guard !ids.isEmpty else { return [] }
        return try storage("look up \(ids.count) token(s) among the cards' tokens") {
            try ids.filter { id in
                try database.queryOne(
                    """
                    SELECT 1 FROM decisions d WHERE d.digital_card_id = ? AND \(Self.lastDecisionNotDeclined)
                        AND NOT EXISTS (SELECT 1 FROM deleted_tokens x WHERE x.digital_card_id = d.digital_card_id)
                    LIMIT 1
                    """, [id]) != nil
            }
        }
    }

    /// The digital card ids the issuer let the TSP create for a card (approved or stepped up, and not declined after
    /// all by the TSP's stand-in or a later answer of its own: `lastDecisionNotDeclined`), oldest first.
    func digitalCardIDs(ofCard id: String) throws(IssuerError) -> [String] {
        try storage("list the tokens of card \(id)") {
            try database.query(
                """
                SELECT d.digital_card_id FROM decisions d
                WHERE d.card_id = ? AND d.digital_card_id != '' AND \(Self.lastDecisionNotDeclined)
                GROUP BY d.digital_card_id ORDER BY MIN(d.id)
                """, [id]
            ).map { try $0.text(0) }
        }
    }
}
