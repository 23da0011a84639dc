import Foundation
import TokenetNode
import TokenetStorage

/// The tokens the issuer knows have nothing left at the TSP: deleted (`deletedTokensSchema`), or unknown to the TSP
/// (answered NOT_FOUND). Neither goes away by asking again, so card-wide token changes and renewals leave both out
/// and say how many, and a token named one by one is answered without a TSP call.
extension IssuerStore {
    /// The tokens the TSP answered NOT_FOUND (to a renewal, a token change or GetFundingCards): the issuer approved
    /// them, but the TSP never created them or no longer knows them, so sending them again is refused the same way.
    static let unknownTokensSchema = """
        CREATE TABLE unknown_tokens (digital_card_id TEXT PRIMARY KEY, learned_at_ms INTEGER NOT NULL);
        """

    /// Why a token is not sent to the TSP, and since when (ms since the epoch) the issuer knows it.
    enum GoneToken: Sendable, Equatable {
        case deleted(sinceMs: UInt64)
        case unknownToTSP(sinceMs: UInt64)

        var isUnknownToTSP: Bool {
            if case .unknownToTSP = self { return true }
            return false
        }
    }

    /// Records `ids` as unknown to the TSP; a token recorded already keeps its first time. Returns those recorded
    /// now, in order: a token sent again with recheck_unknown and refused again was known unknown already, and is
    /// no news to log.
    @discardableResult
    func recordUnknownTokens(_ ids: [String], at date: Date = Date()) throws(IssuerError) -> [String] {
        guard !ids.isEmpty else { return [] }
        let atMs = Int64(clamping: UInt64(max(0, date.timeIntervalSince1970 * 1000)))
        return try storage("record \(ids.count) token(s) unknown to the TSP") {
            try database.transaction { tx in
                try ids.filter { id in
                    try tx.execute(
                        "INSERT OR IGNORE INTO unknown_tokens (digital_card_id, learned_at_ms) VALUES (?, ?)",
                        [id, atMs]
                    ).changes > 0
                }
            }
        }
    }

    /// Which of `ids` the issuer has heard of from the TSP: a token it was asked to decide on, sent a code for, was
    /// told about in a message to its app, or has recorded deleted or unknown. Only such a token can be recorded
    /// unknown to the TSP: an id an operator mistyped was never the TSP's, and recording it would leave
    /// `unknown_tokens` growing with every typo.
    func tokensHeardFromTSP(_ ids: [String]) throws(IssuerError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try storage("look up \(ids.count) token(s) the TSP named") {
            try Set(
                ids.filter { id in
                    try database.queryOne(
                        """
                        SELECT 1 WHERE EXISTS (SELECT 1 FROM decisions WHERE digital_card_id = ?1)
                            OR EXISTS (SELECT 1 FROM outbox WHERE digital_card_id = ?1)
                            OR EXISTS (SELECT 1 FROM app_card_ids WHERE digital_card_id = ?1)
                            OR EXISTS (SELECT 1 FROM deleted_tokens WHERE digital_card_id = ?1)
                            OR EXISTS (SELECT 1 FROM unknown_tokens WHERE digital_card_id = ?1)
                        """, [id]) != nil
                })
        }
    }

    /// Which of `ids` are recorded unknown to the TSP.
    func unknownTokens(among ids: [String]) throws(IssuerError) -> [String] {
        guard !ids.isEmpty else { return [] }
        let recorded = try storage("list the tokens recorded unknown to the TSP") {
            try Set(database.query("SELECT digital_card_id FROM unknown_tokens").map { try $0.text(0) })
        }
        return ids.filter(recorded.contains)
    }

    /// Forgets that the TSP did not know `ids`: it has since shown it does (a result or message naming the token),
    /// so renewals and card-wide token changes send them again. Returns those that were recorded, in order.
    @discardableResult
    func forgetUnknownTokens(_ ids: [String]) throws(IssuerError) -> [String] {
        guard !ids.isEmpty else { return [] }
        return try storage("forget \(ids.count) token(s) recorded unknown to the TSP") {
            // Read first: nearly always none is recorded, and a write transaction for nothing waited out another
            // process's lock on the database (5 s) in the middle of an operator's command, then warned of it.
            let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ", ")
            let recorded = try database.query(
                "SELECT digital_card_id FROM unknown_tokens WHERE digital_card_id IN (\(placeholders))",
                ids)
            guard !recorded.isEmpty else { return [] }
            return try database.transaction { tx in try ids.filter { try Self.forgetUnknownToken($0, tx) } }
        }
    }

    /// Forgets, in `tx`, that the TSP did not know token `id`; returns whether it was recorded so.
    static func forgetUnknownToken(_ id: String, _ tx: Transaction) throws -> Bool {
        try tx.execute("DELETE FROM unknown_tokens WHERE digital_card_id = ?", [id]).changes > 0
    }

    /// Forgets `ids` as unknown to the TSP (`forgetUnknownTokens`), which `why` (the TSP's answer or message) shows it
    /// knows, and logs the tokens whose record went. A record that cannot be removed is logged, not thrown: the
    /// TSP's part is done by then, and the token is only skipped until the TSP names it again or an operator asks
    /// with recheck_unknown.
    func noteKnownToTSP(_ ids: [String], why: String, log: Logger) {
        guard !ids.isEmpty else { return }
        do {
            let forgotten = try forgetUnknownTokens(ids)
            guard !forgotten.isEmpty else { return }
            log.info(
                "tokens recorded unknown to the TSP are known to it after all",
                ["tokens": forgotten.joined(separator: ","), "shown_by": why])
        } catch {
            log.warning(
                "cannot forget tokens recorded unknown to the TSP", ["tokens": "\(ids.count)", "error": "\(error)"])
        }
    }

    /// Which of `ids` the issuer knows are deleted or unknown to the TSP (a deleted one counting as deleted), by id.
    func goneTokens(_ ids: [String]) throws(IssuerError) -> [String: GoneToken] {
        guard !ids.isEmpty else { return [:] }
        return try storage("look up \(ids.count) token(s) known gone") {
            var gone: [String: GoneToken] = [:]
            for id in ids {
                if let row = try database.queryOne(
                    "SELECT learned_at_ms FROM deleted_tokens WHERE digital_card_id = ?", [id])
                {
                    gone[id] = .deleted(sinceMs: UInt64(max(0, try row.int64(0))))
                } else if let row = try database.queryOne(
                    "SELECT learned_at_ms FROM unknown_tokens WHERE digital_card_id = ?", [id])
                {
                    gone[id] = .unknownToTSP(sinceMs: UInt64(max(0, try row.int64(0))))
                }
            }
            return gone
        }
    }
}
