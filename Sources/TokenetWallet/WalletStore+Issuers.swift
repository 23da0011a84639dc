import TokenetWire

extension WalletStore {
    /// The digital cards whose issuer the wallet never recorded: digitized before migration 4 (or from a TSP that
    /// named no issuer). No issuer app sees them until `recordIssuer` names one. Selected in SQL, so a start reads
    /// only these cards, however many the wallet holds.
    public func cardsAwaitingIssuer() throws(WalletError) -> [WalletCardRecord] {
        try run("list the cards awaiting their issuer") {
            try database.query(
                """
                SELECT * FROM cards
                WHERE issuer_id IS NULL AND status = 'DIGITIZED' AND digital_card_id IS NOT NULL
                    AND digital_card_id != ''
                ORDER BY id
                """
            ).map(Self.record)
        }.filter { !($0.result?.digitalCardID ?? "").isEmpty }
    }

    /// Records the issuer the TSP named for card `id` in one transaction, unless one is recorded already (the first
    /// answer stands, as at digitization). Returns the card as stored.
    @discardableResult
    public func recordIssuer(
        id: Int64, issuerID: String, issuerNodeID: String, nowMs: UInt64
    ) throws(WalletError) -> WalletCardRecord {
        try run("record the card's issuer") {
            // An empty node id (an issuer registered without TLS) is stored as NULL, as at digitization: no app's.
            let nodeID: String? = issuerNodeID.isEmpty ? nil : issuerNodeID
            try database.transaction { tx in
                _ = try tx.execute(
                    """
                    UPDATE cards SET issuer_id = ?, issuer_node_id = ?, updated_at_ms = ?
                    WHERE id = ? AND issuer_id IS NULL
                    """, [issuerID, nodeID, Int64(nowMs), id])
            }
            guard let card = try fetch(id) else { throw WalletError(.notFound, "the card vanished") }
            return card
        }
    }
}
