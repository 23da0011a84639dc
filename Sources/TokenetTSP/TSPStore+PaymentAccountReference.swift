import TokenetCard
import TokenetStorage

/// Payment Account References (EMVCo PAR): one per card account, shared by every token of the card in every wallet,
/// so that a wallet, an issuer or a merchant can link them without the card number.
///
/// A card's PAR is the one its tokens already carry (found as the same-card rules find a card: candidates by last
/// four digits, their sealed numbers opened and compared; no digest of a number is stored), or a new one. A renewal
/// moves the tokens onto the new number with their PAR, so a token made later from the new number gets the same
/// PAR: as the BIN controller links an account's numbers, the PAR outlives the number.
extension TSPStore {
    /// The PAR of card `pan`: the one a token of it carries, or a new one for `scheme`.
    func paymentAccountReference(for pan: PAN, scheme: CardScheme, in tx: Transaction) throws -> String {
        let rows = try tx.query(
            """
            SELECT digital_card_id, funding_pan, par FROM tokens
            WHERE pan_last4 = ? AND par IS NOT NULL ORDER BY created_at_ms, rowid
            """, [pan.last4])
        // A row whose number cannot be opened (damaged) is no match: it must not stop every card sharing its last
        // four digits from being digitized.
        for row in rows where (try? vault.openPAN(try row.get(1), recordID: try row.text(0))) == pan {
            return try row.text(2)
        }
        return PaymentAccountReference.new(for: scheme)
    }

    /// Gives the tokens made before PARs were kept theirs, oldest first, so that a card's tokens share one; at each
    /// start, until none is left (a start interrupted half way goes on where it stopped). A token whose card number
    /// cannot be opened (a damaged row) is left without one rather than keeping the TSP from starting. Returns how
    /// many it gave.
    @discardableResult
    func assignMissingPaymentAccountReferences() throws -> Int {
        try database.transaction { tx in
            let rows = try tx.query(
                """
                SELECT digital_card_id, funding_pan, scheme FROM tokens WHERE par IS NULL
                ORDER BY created_at_ms, rowid
                """)
            var given = 0
            for row in rows {
                let id = try row.text(0)
                guard let pan = try? vault.openPAN(try row.get(1), recordID: id) else { continue }
                let par = try paymentAccountReference(
                    for: pan, scheme: CardScheme(rawValue: try row.text(2)) ?? .other, in: tx)
                _ = try tx.execute("UPDATE tokens SET par = ? WHERE digital_card_id = ?", [par, id])
                given += 1
            }
            return given
        }
    }

    /// Schema 28: each token's PAR.
    static let paymentAccountReferenceMigration = Migration(
        version: 28, name: "payment_account_reference", sql: "ALTER TABLE tokens ADD COLUMN par TEXT;")
}
