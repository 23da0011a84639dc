import TokenetCard
import TokenetStorage
import TokenetWire

/// What `GetIssuerTokens` reads: an issuer node's tokens in pages, and what the stand-in's advice about one of them
/// said, rebuilt from the token as the TSP holds it now.
extension TSPStore {
    /// What the TSP still knows of a stand-in decision: approved or declined, its card as the token holds it now (a
    /// renewal moves it), and the decision's reason, time and input method as recorded. The device's type and the
    /// risk scores were never kept.
    struct StandInDecision: Sendable {
        var approved: Bool
        var card: CardData
        var reason: String
        var decidedAtMs: UInt64
        var inputMethod: CardV1.InputMethod
    }

    /// Up to `limit` tokens of the issuers `issuerIDs`, in the order they were stored, after the row `afterRow` (0 for
    /// the first page), each with its row id as its page key.
    func tokens(
        issuerIDs: Set<String>, afterRow: Int64, limit: Int
    ) throws(TSPError) -> [(token: TokenRecord, row: Int64)] {
        guard !issuerIDs.isEmpty else { return [] }
        let issuers = issuerIDs.sorted()
        let marks = Array(repeating: "?", count: issuers.count).joined(separator: ", ")
        do {
            let rows = try database.query(
                """
                SELECT \(Self.tokenColumns), rowid FROM tokens WHERE issuer_id IN (\(marks)) AND rowid > ?
                ORDER BY rowid LIMIT ?
                """, issuers.map { $0 as any SQLValueConvertible } + [afterRow, Int64(limit)])
            return try rows.map { row in
                (try Self.token(from: row), try row.get(Self.tokenColumnCount, as: Int64.self))
            }
        } catch {
            throw TSPError.internal("listing the issuer's tokens", error)
        }
    }

    /// The stand-in's decision on `token`: its approval while the token is not deleted, or its decline; nil when the
    /// stand-in did not decide it, or approved a token deleted since (nothing of it is left to count). The card is
    /// opened from the vault here, to be encrypted to the issuer's key by the caller and to leave the TSP no other
    /// way.
    func standInDecision(of token: TokenRecord) throws(TSPError) -> StandInDecision? {
        guard token.decidedBy == DigitizationOutcome.standInDecider else { return nil }
        let id = token.digitalCardID
        do {
            guard
                let row = try database.queryOne(
                    "SELECT funding_pan, funding_expiry FROM tokens WHERE digital_card_id = ?", [id]),
                let decision = try database.queryOne(
                    """
                    SELECT reason, at_ms, to_state FROM token_events WHERE digital_card_id = ? AND actor = ?
                    ORDER BY id LIMIT 1
                    """, [id, DigitizationOutcome.standInDecider])
            else { return nil }
            // The decision's own event: a decline made the token DEACTIVATED at once.
            let approved = try decision.text(2) != TokenLifecycleStateMachine.State.deactivated.rawValue
            if approved && token.state == .deactivated { return nil }
            let pan = try vault.openPAN(try row.blob(0), recordID: id)
            // MM/YY as RenewCard and Digitize record it; a token from before expiries were kept has none.
            let expiry = try row.get(1, as: String?.self).flatMap { try? CardExpiry(parsing: $0) }
            let method = try database.queryOne(
                """
                SELECT r.input_method FROM digitize_requests d JOIN eligibility_receipts r ON r.receipt = d.receipt
                WHERE d.digital_card_id = ? ORDER BY d.created_at_ms LIMIT 1
                """, [id])
            return StandInDecision(
                approved: approved,
                card: CardData(
                    accountNumber: pan.digits,
                    expirationDate: expiry.map(CardData.ExpirationDate.init) ?? .init(month: "", year: "")),
                reason: try decision.text(0), decidedAtMs: UInt64(max(0, try decision.int64(1))),
                inputMethod: CardV1.InputMethod(rawValue: Int32(clamping: try method?.int64(0) ?? 0)))
        } catch {
            throw TSPError.internal("reading the stand-in's decision on token \"\(id)\"", error)
        }
    }
}
