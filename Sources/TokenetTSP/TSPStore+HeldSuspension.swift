import TokenetCard
import TokenetStorage
import TokenetWire

/// A suspension a party above the wallet placed on a token of a card, which still stands for the wallet account
/// (`IssuerV1.AuthorizeDigitizationRequest.held_suspension`).
///
/// The wallet may delete a token whatever its state, as the cardholder may remove a card; but a token the issuer or
/// the TSP suspended (fraud suspected, a card reported lost) and the wallet then deleted, added again, would be a
/// new token decided as if nothing had happened: whoever holds the device would have lifted a suspension the wallet
/// may not lift (`SuspensionAuthority`). The TSP tells the issuer instead, and its stand-in declines such a card.
struct HeldSuspension: Sendable, Equatable {
    var digitalCardID: String
    /// The token history's actor of the suspension (`issuer:ID`, `issuer-app:…`, `tsp`).
    var suspendedBy: String
    var reason: String
    var suspendedAtMs: UInt64
    /// When the wallet deleted the token while it was suspended; nil while it is still SUSPENDED.
    var deletedAtMs: UInt64?

    var wire: IssuerV1.HeldSuspension {
        IssuerV1.HeldSuspension(
            digitalCardID: digitalCardID, suspendedBy: suspendedBy, reason: reason, suspendedAtMs: suspendedAtMs,
            deleted: deletedAtMs != nil, deletedAtMs: deletedAtMs ?? 0)
    }

    /// For a person: the wallet's decline reason and the logs.
    var summary: String {
        let holder = SuspensionAuthority(actor: suspendedBy).name
        let why = reason.isEmpty ? "" : " (\(reason))"
        guard deletedAtMs != nil else {
            return "token \"\(digitalCardID)\" of this card in this wallet account is suspended by \(holder)\(why)"
        }
        return "token \"\(digitalCardID)\" of this card in this wallet account was suspended by \(holder)\(why) "
            + "when the wallet deleted it"
    }
}

extension TSPStore {
    /// The latest suspension still held over `pan` in wallet `walletNodeID`'s account `walletAccountID`, the token
    /// `except` (the one being made) left out; nil when none stands.
    ///
    /// A token SUSPENDED by the issuer or the TSP holds it, on any device of the account (one device's token does
    /// not make another's suspension moot). A token the wallet deleted while they held it SUSPENDED holds it until a
    /// token of the card made after the deletion in that account is activated (ID&V passed, or an issuer that knew
    /// approved it): a declined or abandoned attempt lifts nothing, or a third try would pass, and neither does a
    /// token made before, decided without the suspension. A suspension the wallet placed itself is its own to lift,
    /// and holds nothing. Only tokens that were ever live are read: the declined and abandoned ones a wallet adding
    /// a card in a loop leaves behind are not opened.
    func heldSuspension(
        of pan: PAN, walletNodeID: String?, walletAccountID: String, except: String
    ) throws -> HeldSuspension? {
        try database.transaction { tx in
            let rows = try tx.query(
                """
                SELECT digital_card_id, state, funding_pan, created_at_ms, activation FROM (
                    SELECT digital_card_id, state, funding_pan, created_at_ms, (
                        SELECT MAX(e.id) FROM token_events e WHERE e.digital_card_id = tokens.digital_card_id
                            AND e.from_state = 'INACTIVE' AND e.to_state = 'ACTIVE') AS activation
                    FROM tokens
                    WHERE wallet_account_id = ? AND wallet_node_id IS ? AND pan_last4 = ? AND digital_card_id != ?)
                WHERE state = 'SUSPENDED' OR activation IS NOT NULL
                """, [walletAccountID, walletNodeID, pan.last4, except])
            var holds: [(hold: HeldSuspension, eventID: Int64)] = []
            /// Each token's activation: the token's creation and the event's row.
            var activations: [(createdAtMs: UInt64, eventID: Int64)] = []
            for row in rows {
                let id = try row.text(0)
                guard try vault.openPAN(try row.get(2), recordID: id) == pan else { continue }
                if let activation = try row.get(4, as: Int64?.self) {
                    activations.append((UInt64(try row.int64(3)), activation))
                }
                if let hold = try hold(tx, of: id, state: try row.text(1)) { holds.append(hold) }
            }
            // A deleted token's hold ends with the activation of a token made after the deletion; a SUSPENDED
            // token's stands while it is.
            return
                holds
                .filter { held in
                    guard let deletedAtMs = held.hold.deletedAtMs else { return true }
                    return !activations.contains { $0.createdAtMs >= deletedAtMs && $0.eventID > held.eventID }
                }
                .max { $0.eventID < $1.eventID }?.hold
        }
    }

    /// The hold token `digitalCardID` places, with the row of the event that ends it as a live token (its
    /// suspension, or its deletion): nil unless a party above the wallet suspended it and it is SUSPENDED still or
    /// the wallet deleted it so.
    private func hold(
        _ tx: Transaction, of digitalCardID: String, state: String
    ) throws -> (hold: HeldSuspension, eventID: Int64)? {
        var deletion: (atMs: UInt64, eventID: Int64)?
        switch TokenLifecycleStateMachine.State(rawValue: state) {
        case .suspended:
            break
        case .deactivated:
            guard
                let row = try tx.queryOne(
                    """
                    SELECT from_state, actor, at_ms, id FROM token_events WHERE digital_card_id = ? AND to_state = ?
                    ORDER BY id DESC LIMIT 1
                    """, [digitalCardID, TokenLifecycleStateMachine.State.deactivated.rawValue]),
                try row.get(0, as: String?.self) == TokenLifecycleStateMachine.State.suspended.rawValue,
                SuspensionAuthority(actor: try row.text(1)) == .wallet
            else { return nil }
            deletion = (UInt64(try row.int64(2)), try row.int64(3))
        default:
            return nil
        }
        // The latest suspension of a party above the wallet, among those it holds (or held when deleted).
        guard
            let suspension = try tx.queryOne(
                """
                SELECT actor, reason, at_ms, event_id FROM token_suspensions
                WHERE digital_card_id = ? AND party != 'wallet'
                ORDER BY event_id DESC LIMIT 1
                """, [digitalCardID])
        else { return nil }
        let hold = HeldSuspension(
            digitalCardID: digitalCardID, suspendedBy: try suspension.text(0), reason: try suspension.text(1),
            suspendedAtMs: UInt64(try suspension.int64(2)), deletedAtMs: deletion?.atMs)
        let suspensionEventID = try suspension.int64(3)
        return (hold, deletion?.eventID ?? suspensionEventID)
    }
}
