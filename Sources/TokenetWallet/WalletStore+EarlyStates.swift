import TokenetStorage
import TokenetWire

/// Token states the TSP announced before the wallet had recorded the digitization that made the token.
///
/// Why: a CARD_STATE can overtake the Digitize answer it follows. Two digitizations of one card at once made the
/// TSP replace the first token (DEACTIVATED) while the wallet still waited for that token's answer; the message
/// found no card with its id, was logged as for an unknown card and acknowledged, and the answer then recorded the
/// token INACTIVE, which the wallet and the issuer app showed for good. The state is kept here instead, and applied
/// when the answer is recorded, by the same version rule as any other state (`updateTokenState`).
extension WalletStore {
    /// How long a state is kept for a token the wallet does not know: an answer comes within a call's deadline, and
    /// a token of another wallet's never comes.
    static let earlyStateLifetimeMs: UInt64 = 24 * 3_600_000

    /// Keeps `state` of the token `digitalCardID`, unless a newer one is kept already; forgets those older than a
    /// day. When the token's card was recorded meanwhile (its Digitize answer came between the caller's look and
    /// this transaction), keeps nothing and returns that card, for the state to be applied to it: kept, the state
    /// waited for an answer already recorded, and the card stayed as its answer left it.
    @discardableResult
    public func keepEarlyState(
        digitalCardID: String, state: CardV1.TokenState, version: UInt64, nowMs: UInt64
    ) throws(WalletError) -> WalletCardRecord? {
        try run("keep the token state") {
            try database.transaction { tx in
                if let recorded = try tx.queryOne(Self.digitalCardQuery, [digitalCardID]).map(Self.record) {
                    return recorded
                }
                _ = try tx.execute(
                    "DELETE FROM early_card_states WHERE received_at_ms < ?",
                    [Int64(clamping: nowMs) - Int64(Self.earlyStateLifetimeMs)])
                _ = try tx.execute(
                    """
                    INSERT INTO early_card_states (digital_card_id, token_state, state_version, received_at_ms)
                    VALUES (?, ?, ?, ?)
                    ON CONFLICT(digital_card_id) DO UPDATE SET token_state = excluded.token_state,
                        state_version = excluded.state_version, received_at_ms = excluded.received_at_ms
                    WHERE early_card_states.token_state != ?
                        AND (excluded.token_state = ? OR excluded.state_version > early_card_states.state_version)
                    """,
                    [
                        digitalCardID, Int64(state.rawValue), Int64(clamping: version), Int64(clamping: nowMs),
                        Int64(CardV1.TokenState.deactivated.rawValue), Int64(CardV1.TokenState.deactivated.rawValue),
                    ])
                return nil
            }
        }
    }

    /// `result` with the state kept for its token applied, when that state is the later one (or DEACTIVATED,
    /// final whatever its version), and the kept state forgotten.
    static func withEarlyState(_ result: TspV1.DigitizeResponse, in tx: Transaction) throws -> TspV1.DigitizeResponse {
        guard !result.digitalCardID.isEmpty,
            let row = try tx.queryOne(
                "SELECT token_state, state_version FROM early_card_states WHERE digital_card_id = ?",
                [result.digitalCardID])
        else { return result }
        _ = try tx.execute("DELETE FROM early_card_states WHERE digital_card_id = ?", [result.digitalCardID])
        let state = CardV1.TokenState(rawValue: Int32(try row.int(0)))
        let version = UInt64(max(0, try row.int64(1)))
        guard result.tokenState != .deactivated, state == .deactivated || version > result.stateVersion else {
            return result
        }
        var result = result
        result.tokenState = state
        result.stateVersion = max(result.stateVersion, version)
        return result
    }
}
