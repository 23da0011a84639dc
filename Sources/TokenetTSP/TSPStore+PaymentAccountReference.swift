import TokenetCard
import TokenetStorage

/// Payment Account References (EMVCo PAR): one per card account, shared by every token of the card in every wallet,
/// so that a wallet, an issuer or a merchant can link them without the card number.
///
/// The TSP keeps the account's numbers beside its PAR (`par_numbers`, each number sealed to the PAR it belongs to),
/// as a BIN controller does: a number seen once keeps its PAR after its tokens are deleted or moved onto a renewed
/// number, and a renewal adds the new number to the same PAR. A number is found as the same-card rules find a card
/// (candidates by last four digits, their sealed numbers opened and compared): no digest of a number is stored.
/// Matching only the tokens' numbers split an account in two when a digitization of the old number came between a
/// renewal the TSP applied and the issuer's learning of it (the issuer still held the old number).
extension TSPStore {
    /// The PAR of card `pan`: the one its number was given before, or a new one for `scheme`, recorded.
    func paymentAccountReference(for pan: PAN, scheme: CardScheme, in tx: Transaction) throws -> String {
        try Self.paymentAccountReference(for: pan, scheme: scheme, vault: vault, in: tx)
    }

    static func paymentAccountReference(for pan: PAN, scheme: CardScheme, vault: DataVault, in tx: Transaction) throws
        -> String
    {
        if let known = try knownPaymentAccountReference(of: pan, vault: vault, in: tx) { return known }
        let par = PaymentAccountReference.new(for: scheme)
        try insertNumber(pan, of: par, vault: vault, in: tx)
        return par
    }

    /// The PAR number `pan` was given, if any.
    func knownPaymentAccountReference(of pan: PAN, in tx: Transaction) throws -> String? {
        try Self.knownPaymentAccountReference(of: pan, vault: vault, in: tx)
    }

    static func knownPaymentAccountReference(of pan: PAN, vault: DataVault, in tx: Transaction) throws -> String? {
        try rows(holding: pan, vault: vault, in: tx).first?.par
    }

    /// The `par_numbers` rows that hold `pan`. A row that cannot be opened (damaged) is no match: it must not stop
    /// every card sharing its last four digits from being digitized.
    private static func rows(holding pan: PAN, vault: DataVault, in tx: Transaction) throws
        -> [(rowID: Int64, par: String)]
    {
        try tx.query("SELECT rowid, par, pan_sealed FROM par_numbers WHERE pan_last4 = ?", [pan.last4]).compactMap {
            row in
            let par = try row.text(1)
            guard (try? vault.openPAN(try row.get(2), recordID: "par:\(par)")) == pan else { return nil }
            return (try row.int64(0), par)
        }
    }

    /// Makes `pan` a number of the account `par` (a renewal's new number), taking it from the account that had it
    /// before, if any: the issuer gave the number to this card, and a token made of it later belongs here. Kept with
    /// its old account, a number an issuer reused joined the renewed card's tokens under two PARs, and two
    /// cardholders' accounts under one.
    func bindNumber(_ pan: PAN, to par: String, in tx: Transaction) throws {
        let held = try Self.rows(holding: pan, vault: vault, in: tx)
        if held.contains(where: { $0.par == par }) { return }
        for row in held { _ = try tx.execute("DELETE FROM par_numbers WHERE rowid = ?", [row.rowID]) }
        try Self.insertNumber(pan, of: par, vault: vault, in: tx)
    }

    /// Records `pan`, which has no PAR yet, as a number of the account `par`.
    private static func insertNumber(_ pan: PAN, of par: String, vault: DataVault, in tx: Transaction) throws {
        _ = try tx.execute(
            "INSERT INTO par_numbers (par, pan_last4, pan_sealed) VALUES (?, ?, ?)",
            [par, pan.last4, try vault.seal(pan, recordID: "par:\(par)")])
    }

    /// Gives the tokens made before PARs were kept theirs, oldest first, so that a card's tokens share one; at each
    /// start, until none is left (a start interrupted half way goes on where it stopped). A token whose card number
    /// cannot be opened (a damaged row) is left without one rather than keeping the TSP from starting. Returns how
    /// many it gave.
    @discardableResult
    func assignMissingPaymentAccountReferences() throws -> Int {
        try Self.assignMissingPaymentAccountReferences(in: database, vault: vault)
    }

    static func assignMissingPaymentAccountReferences(in database: Database, vault: DataVault) throws -> Int {
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
                    for: pan, scheme: CardScheme(rawValue: try row.text(2)) ?? .other, vault: vault, in: tx)
                _ = try tx.execute("UPDATE tokens SET par = ? WHERE digital_card_id = ?", [par, id])
                given += 1
            }
            return given
        }
    }

    /// Schema 28: each token's PAR, and each account's numbers.
    static let paymentAccountReferenceMigration = Migration(
        version: 28, name: "payment_account_reference",
        sql: """
            ALTER TABLE tokens ADD COLUMN par TEXT;
            CREATE TABLE par_numbers (
                par TEXT NOT NULL,
                pan_last4 TEXT NOT NULL,
                pan_sealed BLOB NOT NULL
            );
            CREATE INDEX par_numbers_last4 ON par_numbers(pan_last4);
            """)
}
