import TokenetStorage

extension TSPStore {
    /// The suspensions token `digitalCardID` holds, by party (wallet, issuer, TSP): those of a SUSPENDED token, or of
    /// one deleted while SUSPENDED (kept for `HeldSuspension`).
    func suspensions(_ tx: Transaction, of digitalCardID: String) throws -> [SuspensionAuthority.Held] {
        try tx.query(
            "SELECT party, actor, reason FROM token_suspensions WHERE digital_card_id = ?", [digitalCardID]
        ).compactMap { row in
            // A party this version does not know counts as the TSP, as an unknown actor does.
            let party = SuspensionAuthority(party: try row.text(0)) ?? .tsp
            return SuspensionAuthority.Held(party: party, actor: try row.text(1), reason: try row.text(2))
        }.sorted { $0.party < $1.party }
    }

    /// Records `actor`'s party's suspension of the token, placed by the history event `eventID`.
    func placeSuspension(
        _ tx: Transaction, of digitalCardID: String, actor: String, reason: String, nowMs: UInt64, eventID: Int64
    ) throws {
        _ = try tx.execute(
            """
            INSERT INTO token_suspensions (digital_card_id, party, actor, reason, at_ms, event_id)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (digital_card_id, party) DO UPDATE SET actor = excluded.actor, reason = excluded.reason,
                at_ms = excluded.at_ms, event_id = excluded.event_id
            """,
            [digitalCardID, SuspensionAuthority(actor: actor).party, actor, reason, Int64(nowMs), eventID])
    }

    /// Forgets `party`'s suspension of the token, or every one (`party` nil) when it becomes ACTIVE again.
    func liftSuspensions(_ tx: Transaction, of digitalCardID: String, party: SuspensionAuthority? = nil) throws {
        if let party {
            _ = try tx.execute(
                "DELETE FROM token_suspensions WHERE digital_card_id = ? AND party = ?", [digitalCardID, party.party])
        } else {
            _ = try tx.execute("DELETE FROM token_suspensions WHERE digital_card_id = ?", [digitalCardID])
        }
    }
}
