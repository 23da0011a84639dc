import Foundation
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
    }

    /// Records `ids` as unknown to the TSP; a token recorded already keeps its first time.
    func recordUnknownTokens(_ ids: [String], at date: Date = Date()) throws(IssuerError) {
        guard !ids.isEmpty else { return }
        let atMs = Int64(clamping: UInt64(max(0, date.timeIntervalSince1970 * 1000)))
        try storage("record \(ids.count) token(s) unknown to the TSP") {
            try database.transaction { tx in
                for id in ids {
                    _ = try tx.execute(
                        "INSERT OR IGNORE INTO unknown_tokens (digital_card_id, learned_at_ms) VALUES (?, ?)",
                        [id, atMs])
                }
            }
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
