import TokenetStorage
import TokenetWire

/// Finding a card by the digital card id of its token, which every TSP notification and every issuer app's call
/// names: one read through `cards_digital_card` (migration 7), however many cards the wallet holds.
///
/// Two cards could hold the same id only if the TSP named one token for two digitizations; the lookups then choose
/// the card added first (the lowest id), as reading every card in order and taking the first match did.
extension WalletStore {
    /// The digitized card whose token has this digital card id; nil for an empty id or one no card holds.
    public func card(digitalCardID: String) throws(WalletError) -> WalletCardRecord? {
        guard !digitalCardID.isEmpty else { return nil }
        return try run("read the card") {
            try database.queryOne(Self.digitalCardQuery, [digitalCardID]).map(Self.record)
        }
    }

    /// The card whose token has this digital card id, when it is the card of the issuer app `issuerNodeID`
    /// (`WalletCardRecord.belongs`): another issuer's card is as unknown to an app as one the wallet lacks.
    public func card(digitalCardID: String, issuerNodeID: String) throws(WalletError) -> WalletCardRecord? {
        guard !digitalCardID.isEmpty else { return nil }
        return try run("read the card") {
            try database.queryOne(Self.issuerDigitalCardQuery, [digitalCardID, issuerNodeID]).map(Self.record)
        }
    }

    static let digitalCardQuery = "SELECT * FROM cards WHERE digital_card_id = ? ORDER BY id LIMIT 1"

    /// The card whose digitization was asked with idempotency key `requestID`: the one way to name a card whose
    /// Digitize was never answered, since the wallet then does not know its token's digital card id.
    public func card(digitizeRequestID requestID: String) throws(WalletError) -> WalletCardRecord? {
        guard !requestID.isEmpty else { return nil }
        return try run("read the card") {
            try database.queryOne("SELECT * FROM cards WHERE digitize_request_id = ?", [requestID]).map(Self.record)
        }
    }

    /// A NULL `issuer_node_id` (an issuer not yet known, or one without a node) equals no caller, as `belongs` says.
    static let issuerDigitalCardQuery =
        "SELECT * FROM cards WHERE digital_card_id = ? AND issuer_node_id = ? ORDER BY id LIMIT 1"

    /// Copies the digital card id out of the stored result of every card that has a result and no id yet: the cards
    /// digitized before migration 7. A declined card gets the empty id, so it is not read again at the next start.
    func fillDigitalCardIDs() throws(WalletError) {
        try run("record the cards' digital card ids") {
            try database.transaction { tx in
                let rows = try tx.query(
                    "SELECT id, result FROM cards WHERE digital_card_id IS NULL AND result IS NOT NULL")
                for row in rows {
                    let result = try TspV1.DigitizeResponse(serializedBytes: try row.get(1, as: [UInt8].self))
                    _ = try tx.execute(
                        "UPDATE cards SET digital_card_id = ? WHERE id = ?", [result.digitalCardID, try row.int64(0)])
                }
            }
        }
    }
}
