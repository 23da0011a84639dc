import TokenetStorage

extension WalletStore {
    /// The longest reason kept: an issuer app's reason is a sentence; more is cut, so a peer cannot grow the row.
    static let activationFailureLimit = 300

    /// Records why the issuer app did not activate card `id`'s token, while the token still waits for its ID&V
    /// (INACTIVE): `cards` shows it until the token's state changes. Returns whether it was recorded.
    @discardableResult
    public func recordActivationFailure(id: Int64, reason: String, nowMs: UInt64) throws(WalletError) -> Bool {
        // One line: a line break in the issuer app's words printed a line of its own under `wallet cards`, which
        // could read as another card's.
        let oneLine = String(
            String.UnicodeScalarView(
                reason.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        let given = oneLine.isEmpty ? "no reason given" : oneLine
        let kept =
            given.count <= Self.activationFailureLimit
            ? given : String(given.prefix(Self.activationFailureLimit)) + "…"
        return try run("record the failed activation") {
            try database.transaction { tx in
                guard let card = try tx.queryOne("SELECT * FROM cards WHERE id = ?", [id]).map(Self.record),
                    card.result?.tokenState == .inactive
                else { return false }
                _ = try tx.execute(
                    "UPDATE cards SET activation_failure = ?, updated_at_ms = ? WHERE id = ?",
                    [kept, Int64(nowMs), id])
                return true
            }
        }
    }
}
