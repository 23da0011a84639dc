import TokenetWire

extension WalletStore {
    /// The card's issuer renewed it behind its token (CARD_RENEWAL): the token goes on, and the wallet shows the new
    /// card's last four digits, in its list and in the answers to the issuer app (`CurrentTokens`, which Apple Pay
    /// calls the pass's primaryAccountNumberSuffix). Returns whether they changed; a renewal heard again changes
    /// nothing. A deleted card is left as it was deleted.
    public func renewCard(id: Int64, panLast4: String, nowMs: UInt64) throws(WalletError) -> Bool {
        try run("record the card's renewal") {
            try database.transaction { tx in
                guard let row = try tx.queryOne("SELECT pan_last4, result FROM cards WHERE id = ?", [id]) else {
                    throw WalletError(.notFound, "\(WalletCardRecord.ref(id)) does not exist")
                }
                var result = try row.get(1, as: [UInt8]?.self).map { try TspV1.DigitizeResponse(serializedBytes: $0) }
                guard result?.tokenState != .deactivated, try row.text("pan_last4") != panLast4 else { return false }
                result?.panLast4 = panLast4
                _ = try tx.execute(
                    "UPDATE cards SET pan_last4 = ?, result = ?, updated_at_ms = ? WHERE id = ?",
                    [panLast4, try result?.serializedBytes(), Int64(nowMs), id])
                return true
            }
        }
    }
}
