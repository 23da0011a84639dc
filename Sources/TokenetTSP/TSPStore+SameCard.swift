import TokenetCard
import TokenetStorage

/// A card has at most one live token per wallet (the wallet node that digitized it, as its certificate names it),
/// wallet account and device. A cardholder who gives up on a step-up and adds the card again gets a new token; the
/// one left waiting for ID&V is replaced, so it can never be activated beside the new one, and one nobody comes back
/// to is deactivated once the step-up window is over. Two wallet nodes are two wallets, as two wallet providers on
/// one phone are: their accounts and devices may carry the same names (a node's defaults) without one wallet's
/// digitization replacing or refusing the other's token.
/// A digitization left pending that the step-up expiry ended: its token's change, and the Digitize request id the
/// wallet knows the card by, since that request was never answered with the token's id.
struct ExpiredDigitization: Sendable, Equatable {
    var change: TokenStateChange
    var requestID: String
}

extension TSPStore {
    /// Why a token waiting for ID&V may have ended DEACTIVATED, and what the cardholder does next.
    static let deactivatedHint =
        " (deleted, replaced by a newer digitization of its card, or its step-up expired: its history says which); "
        + "add the card again"

    /// `deactivatedHint` for token `digitalCardID` in particular, from the event that deactivated it, read with
    /// `queryOne` (the database's, or a transaction's): a token replaced by a newer digitization of its card names
    /// the token that holds the card now, which the wallet already holds (to verify, or live already); told to add
    /// the card again, the cardholder made a third. The replacements are followed to the last (at most 8).
    static func deactivatedHint(
        of digitalCardID: String, _ queryOne: (String, [any SQLValueConvertible]) throws -> Row?
    ) throws -> String {
        func deactivation(_ id: String) throws -> (actor: String, reason: String)? {
            try queryOne(
                """
                SELECT actor, reason FROM token_events WHERE digital_card_id = ? AND to_state = ?
                ORDER BY id DESC LIMIT 1
                """, [id, TokenLifecycleStateMachine.State.deactivated.rawValue]
            ).map { (try $0.text(0), try $0.text(1)) }
        }
        guard let first = try deactivation(digitalCardID) else { return deactivatedHint }
        guard var next = replacingToken(in: first.reason) else {
            // A step-up that expired says already that the card can be added again.
            let again = first.reason.contains("added again") ? "" : "; add the card again"
            // "by ACTOR, REASON": actors read PARTY:ID (`TokenActor`), and a colon after one read as garbled.
            return " (by \(first.actor), \(first.reason))\(again)"
        }
        for _ in 0..<8 {
            guard let row = try queryOne("SELECT state FROM tokens WHERE digital_card_id = ?", [next]) else { break }
            switch TokenLifecycleStateMachine.State(rawValue: try row.text(0)) ?? .deactivated {
            case .inactive:
                return " (\(first.reason)); verify token \"\(next)\" instead"
            case .active, .suspended:
                return " (\(first.reason)); the card is in the wallet already, as token \"\(next)\""
            case .deactivated:
                guard let later = try deactivation(next), let replacer = replacingToken(in: later.reason) else {
                    let why = try deactivation(next).map { " (by \($0.actor), \($0.reason))" } ?? ""
                    return " (\(first.reason)); the card's latest token, \"\(next)\", is deactivated too\(why); "
                        + "add the card again"
                }
                next = replacer
            }
        }
        return " (\(first.reason)); add the card again"
    }

    /// The token named in a replaced token's reason (`replaceStepUps`); nil for any other reason.
    static func replacingToken(in reason: String) -> String? {
        guard reason.hasPrefix(replacedReason), let open = reason.range(of: "(token \""),
            let close = reason.range(of: "\")", range: open.upperBound..<reason.endIndex)
        else { return nil }
        return String(reason[open.upperBound..<close.lowerBound])
    }

    /// How the event of a token replaced by a newer digitization of its card begins (`replaceStepUps`).
    static let replacedReason = "replaced by a new digitization of the same card on this device"

    /// The tokens other than `except` of `pan` in this wallet (`walletNodeID`; nil for tokens digitized without a
    /// certificate, which are one wallet among themselves) and wallet account on this device whose state is one of
    /// `states`, read in `tx`. With `decidedOnly`, a token whose digitization is still pending is left out: its own
    /// decision, when recorded, sorts it out (declined if the card is live by then).
    func sameCardTokens(
        _ tx: Transaction, of pan: PAN, walletNodeID: String?, walletAccountID: String, deviceID: String,
        except: String, states: [TokenLifecycleStateMachine.State], decidedOnly: Bool = false
    ) throws -> [TokenRecord] {
        let stateList = states.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let pending =
            decidedOnly
            ? "AND digital_card_id NOT IN (SELECT digital_card_id FROM digitize_requests WHERE status = 'pending')"
            : ""
        let rows = try tx.query(
            """
            SELECT \(Self.tokenColumns), funding_pan FROM tokens
            WHERE wallet_account_id = ? AND device_id = ? AND pan_last4 = ? AND state IN (\(stateList))
                AND wallet_node_id IS ? AND digital_card_id != ? \(pending)
            ORDER BY created_at_ms, rowid
            """, [walletAccountID, deviceID, pan.last4, walletNodeID, except])
        var tokens: [TokenRecord] = []
        for row in rows where try vault.openPAN(try row.get(Self.tokenColumnCount), recordID: try row.text(0)) == pan {
            tokens.append(try Self.token(from: row))
        }
        return tokens
    }

    /// Refuses making `digitalCardID` live (activating or resuming it) while another token of its card is live in
    /// the same wallet account on the same device: whichever path activates it, the card keeps one live token.
    func requireNoLiveSibling(_ tx: Transaction, of digitalCardID: String) throws {
        guard
            let row = try tx.queryOne(
                "SELECT \(Self.tokenColumns), funding_pan FROM tokens WHERE digital_card_id = ?", [digitalCardID])
        else { throw TSPError.unknownToken(digitalCardID) }
        let token = try Self.token(from: row)
        // Most cards have no other live token ending in the same digits: then no card number needs opening.
        let candidates = try tx.queryOne(
            """
            SELECT COUNT(*) FROM tokens WHERE wallet_account_id = ? AND device_id = ? AND pan_last4 = ?
                AND state IN ('ACTIVE', 'SUSPENDED') AND wallet_node_id IS ? AND digital_card_id != ?
            """, [token.walletAccountID, token.deviceID, token.panLast4, token.walletNodeID, digitalCardID])
        guard try candidates?.int64(0) ?? 0 > 0 else { return }
        let pan = try vault.openPAN(try row.get(Self.tokenColumnCount), recordID: digitalCardID)
        let live = try sameCardTokens(
            tx, of: pan, walletNodeID: token.walletNodeID, walletAccountID: token.walletAccountID,
            deviceID: token.deviceID, except: digitalCardID, states: [.active, .suspended])
        guard let other = live.first else { return }
        throw TSPError(
            .failedPrecondition,
            "the card ending in \(token.panLast4) is already live in this wallet on this device as token "
                + "\"\(other.digitalCardID)\" (\(other.state)); a card has one live token per device, so token "
                + "\"\(digitalCardID)\" stays \(token.state): delete one of them")
    }

    /// Why live `token` may not be renewed to `pan`, or nil when it may: another token of that card is live in the
    /// same wallet account on the same device, and the renewal would give the card a second live token there. A
    /// renewal keeping the token's own number (a new expiry) changes nothing about which card is live, so it passes.
    func renewalConflict(_ tx: Transaction, renewing token: TokenRecord, to pan: PAN) throws -> TSPError? {
        guard token.state == .active || token.state == .suspended else { return nil }
        // Most cards have no other live token ending in the same digits: then no card number needs opening.
        let candidates = try tx.queryOne(
            """
            SELECT COUNT(*) FROM tokens WHERE wallet_account_id = ? AND device_id = ? AND pan_last4 = ?
                AND state IN ('ACTIVE', 'SUSPENDED') AND wallet_node_id IS ? AND digital_card_id != ?
            """, [token.walletAccountID, token.deviceID, pan.last4, token.walletNodeID, token.digitalCardID])
        guard try candidates?.int64(0) ?? 0 > 0 else { return nil }
        let current = try tx.queryOne(
            "SELECT funding_pan FROM tokens WHERE digital_card_id = ?", [token.digitalCardID])
        if let current, try vault.openPAN(try current.get(0), recordID: token.digitalCardID) == pan { return nil }
        let live = try sameCardTokens(
            tx, of: pan, walletNodeID: token.walletNodeID, walletAccountID: token.walletAccountID,
            deviceID: token.deviceID, except: token.digitalCardID, states: [.active, .suspended])
        guard let other = live.first else { return nil }
        return TSPError(
            .failedPrecondition,
            "the renewed card ending in \(pan.last4) is already live in this wallet on this device as token "
                + "\"\(other.digitalCardID)\" (\(other.state)); a card has one live token per device, so token "
                + "\"\(token.digitalCardID)\" keeps its card: delete one of them, then renew the other")
    }

    /// The earlier tokens of `token`'s card in its wallet account on its device still waiting for ID&V, deactivated
    /// in `tx` because `token` (a new digitization of the card, approved or stepped up) replaces them.
    func replaceStepUps(
        _ tx: Transaction, by token: TokenRecord, pan: PAN, traceID: String, nowMs: UInt64
    ) throws -> [TokenStateChange] {
        let waiting = try sameCardTokens(
            tx, of: pan, walletNodeID: token.walletNodeID, walletAccountID: token.walletAccountID,
            deviceID: token.deviceID, except: token.digitalCardID, states: [.inactive], decidedOnly: true)
        return try waiting.map { old in
            try deactivate(
                tx, old,
                reason: Self.replacedReason + " (token \"\(token.digitalCardID)\")", traceID: traceID, nowMs: nowMs)
        }
    }

    /// The INACTIVE tokens decided at or before `?` whose digitization is not pending, oldest first: a search
    /// through the partial indexes `tokens_inactive_age` and `digitize_requests_pending` (TSP migration 13), since
    /// it runs before every Digitize and ID&V call.
    static let abandonedStepUpsQuery = """
        SELECT \(tokenColumns) FROM tokens
        WHERE state = 'INACTIVE' AND updated_at_ms <= ?
            AND digital_card_id NOT IN (SELECT digital_card_id FROM digitize_requests WHERE status = 'pending')
        ORDER BY updated_at_ms, rowid
        """

    /// The INACTIVE tokens made at or before `?` whose digitization is still pending (the TSP stopped while asking
    /// the issuer, and the wallet never retried), oldest first: a read of the partial index `digitize_requests_pending`
    /// (few rows: a digitization is pending only while the issuer is asked) and of each token by its id.
    static let stalePendingDigitizationsQuery = """
        SELECT \(tokenColumns) FROM tokens
        WHERE state = 'INACTIVE' AND updated_at_ms <= ?
            AND digital_card_id IN (SELECT digital_card_id FROM digitize_requests WHERE status = 'pending')
        ORDER BY updated_at_ms, rowid
        """

    /// Deactivates every token whose step-up was decided at or before `decidedAtOrBeforeMs` and is still INACTIVE:
    /// the cardholder abandoned it. A digitization still pending that long after its token was made is ended too:
    /// the wallet's retry, which resumes it, comes within moments, so nobody is coming back to it. Its token is
    /// deactivated and its request answered DECLINED (`DigitizationOutcome.expired`), so a retry after all gets
    /// that answer and an issuer's decision arriving late cannot revive the token.
    /// Their parties are told CARD_STATE DEACTIVATED (STEP_UP_EXPIRED or DIGITIZATION_EXPIRED), journaled with the
    /// change.
    /// `pendingMadeAtOrBeforeMs` (by default the same cut-off) is earlier when a digitization may still be asking
    /// the issuer at `decidedAtOrBeforeMs`.
    func expireStepUps(
        decidedAtOrBeforeMs: UInt64, window: String, traceID: String, nowMs: UInt64,
        pendingMadeAtOrBeforeMs: UInt64? = nil
    ) throws -> Journaled<(stepUps: [TokenStateChange], digitizations: [ExpiredDigitization])> {
        try journaling(
            { tx in
                let cutOff = Int64(clamping: decidedAtOrBeforeMs)
                let abandoned = try tx.query(Self.abandonedStepUpsQuery, [cutOff]).map(Self.token(from:))
                let stepUps = try abandoned.map { token in
                    try deactivate(
                        tx, token,
                        reason: "step-up not completed within \(window); the card can be added again",
                        traceID: traceID, nowMs: nowMs)
                }
                let pendingCutOff = Int64(clamping: pendingMadeAtOrBeforeMs ?? decidedAtOrBeforeMs)
                let stale = try tx.query(Self.stalePendingDigitizationsQuery, [pendingCutOff]).map(Self.token(from:))
                let pending = try stale.map { token in
                    try expirePending(tx, token, window: window, traceID: traceID, nowMs: nowMs)
                }
                return (stepUps, pending)
            },
            announce: { expired in
                expired.stepUps.flatMap { TSPService.cardState($0, reason: "STEP_UP_EXPIRED", initiator: "tsp") }
                    + expired.digitizations.flatMap {
                        TSPService.cardState(
                            $0.change, reason: "DIGITIZATION_EXPIRED", initiator: "tsp",
                            digitizeRequestID: $0.requestID)
                    }
            })
    }

    /// Ends a digitization left pending: its token deactivated, its request answered as declined by the TSP.
    private func expirePending(
        _ tx: Transaction, _ token: TokenRecord, window: String, traceID: String, nowMs: UInt64
    ) throws -> ExpiredDigitization {
        let request = try tx.queryOne(
            "SELECT request_id FROM digitize_requests WHERE digital_card_id = ? AND status = 'pending'",
            [token.digitalCardID])
        let outcome = DigitizationOutcome.expired(window: window)
        let change = try deactivate(tx, token, reason: outcome.reason, traceID: traceID, nowMs: nowMs)
        var decided = change.after
        decided.decidedBy = outcome.decidedBy
        _ = try tx.execute(
            "UPDATE tokens SET decided_by = ? WHERE digital_card_id = ?", [outcome.decidedBy, token.digitalCardID])
        let response = Self.response(token: decided, outcome: outcome)
        _ = try tx.execute(
            """
            UPDATE digitize_requests SET status = 'done', response = ? WHERE digital_card_id = ? AND status = 'pending'
            """, [try response.serializedBytes(), token.digitalCardID])
        return ExpiredDigitization(
            change: TokenStateChange(before: change.before, after: decided), requestID: try request?.text(0) ?? "")
    }

    private func deactivate(
        _ tx: Transaction, _ token: TokenRecord, reason: String, traceID: String, nowMs: UInt64
    ) throws -> TokenStateChange {
        var lifecycle = TokenLifecycleStateMachine(state: token.state)
        guard case .transitioned(let from, let to) = lifecycle.delete() else {
            throw TSPError(.internal, "token \"\(token.digitalCardID)\" could not be deactivated from \(token.state)")
        }
        try setState(
            tx, token: token.digitalCardID, from: from, to: to, actor: "tsp", reason: reason, traceID: traceID,
            nowMs: nowMs)
        var after = token
        after.state = to
        after.stateVersion += 1
        return TokenStateChange(before: token, after: after)
    }
}
