import Foundation
import TokenetCard
import TokenetStorage
import TokenetWire

/// A digitization whose token exists (INACTIVE) but whose decision is not recorded yet.
struct PendingDigitization: Sendable {
    var requestID: String
    var token: TokenRecord
    var receipt: EligibilityReceiptRecord
}

enum DigitizationStart: Sendable {
    /// The request was finished before: the stored answer.
    case completed(TspV1.DigitizeResponse)
    /// The token exists; the issuer's decision is still to be asked and recorded.
    case pending(PendingDigitization)
}

/// The numbers of a new token, made before the transaction that stores it.
struct NewToken: Sendable {
    var digitalCardID: DigitalCardID
    var tokenPAN: PAN
    var expiry: CardExpiry
}

extension TSPStore {
    /// Step one of Digitize, in one transaction: the request either finished before (its answer), is pending (a
    /// crash or a concurrent retry left it between the steps), or is new — then the receipt is checked and
    /// consumed, and the token is stored INACTIVE with its first event. The issuer is asked only after this commits,
    /// so a crash at any point leaves at most one token per request id.
    func beginDigitization(
        _ request: TspV1.DigitizeRequest, nowMs: UInt64, traceID: String, walletNodeID: String? = nil,
        makeToken: (PAN, CardScheme) throws -> NewToken
    ) throws -> DigitizationStart {
        try database.transaction { tx in
            // Each wallet node's request ids are its own (TSP migration 26): another node's same id is another request.
            if let row = try tx.queryOne(
                """
                SELECT receipt, digital_card_id, status, response FROM digitize_requests
                WHERE wallet_node_id = ? AND request_id = ?
                """, [walletNodeID ?? "", request.requestID])
            {
                guard try row.text(0) == request.eligibilityReceipt else {
                    throw TSPError(
                        .failedPrecondition,
                        "request_id \"\(request.requestID)\" was already used with another eligibility receipt; "
                            + "use a new request_id for a new digitization")
                }
                // Replaying a request needs the wallet node and account it was made for, not just its two
                // identifiers: another node replaying them was answered with the first node's token.
                let owner = try tx.queryOne(
                    "SELECT wallet_account_id, wallet_node_id, device_id FROM eligibility_receipts WHERE receipt = ?",
                    [try row.text(0)])
                if let owner { try EligibilityReceiptRecord.requireChecked(by: walletNodeID, owner: try owner.get(1)) }
                guard try owner?.text(0) == request.walletAccountID else {
                    throw TSPError(.permissionDenied, "the eligibility receipt was issued to another wallet account")
                }
                // As the first request was checked: a replay naming another device got the first device's token.
                guard try owner?.text(2) == (request.device?.deviceID ?? "") else {
                    throw TSPError(.permissionDenied, "the eligibility receipt was issued for another device")
                }
                if try row.text(2) == "done" {
                    return .completed(try TspV1.DigitizeResponse(serializedBytes: try row.get(3, as: [UInt8].self)))
                }
                guard
                    let token = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?", [try row.text(1)]
                    ).map(Self.token(from:)),
                    let receipt = try eligibilityReceipt(try row.text(0), in: tx)
                else { throw TSPError(.internal, "a pending digitization lost its token or receipt") }
                return .pending(PendingDigitization(requestID: request.requestID, token: token, receipt: receipt))
            }
            let receipt = try checkedReceipt(request, walletNodeID: walletNodeID, nowMs: nowMs, in: tx)
            let pan = try receipt.card.pan()
            let new = try makeToken(pan, receipt.scheme)
            let token = TokenRecord(
                digitalCardID: new.digitalCardID.rawValue, scheme: receipt.scheme, tokenLast4: new.tokenPAN.last4,
                tokenExpiry: new.expiry.description, panLast4: pan.last4, issuerID: receipt.issuerID,
                walletAccountID: receipt.walletAccountID, deviceID: receipt.deviceID, state: .inactive,
                decidedBy: nil, walletNodeID: walletNodeID,
                paymentAccountReference: try paymentAccountReference(for: pan, scheme: receipt.scheme, in: tx))
            _ = try tx.execute(
                """
                INSERT INTO tokens (digital_card_id, scheme, token_pan, token_last4, token_expiry, funding_pan,
                    pan_last4, issuer_id, wallet_account_id, device_id, state, created_at_ms, updated_at_ms,
                    wallet_node_id, funding_expiry, par)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'INACTIVE', ?, ?, ?, ?, ?)
                """,
                [
                    token.digitalCardID, token.scheme.rawValue,
                    try vault.seal(new.tokenPAN, recordID: "token:\(token.digitalCardID)"), token.tokenLast4,
                    token.tokenExpiry, try vault.seal(pan, recordID: token.digitalCardID), token.panLast4,
                    token.issuerID, token.walletAccountID, token.deviceID, Int64(nowMs), Int64(nowMs), walletNodeID,
                    (try? receipt.card.expiry())?.description, token.paymentAccountReference,
                ])
            try recordEvent(
                tx, token: token.digitalCardID, from: nil, to: .inactive, actor: "tsp",
                reason: "token created; waiting for the issuer's decision", traceID: traceID, nowMs: nowMs)
            _ = try tx.execute(
                """
                INSERT INTO digitize_requests (wallet_node_id, request_id, receipt, digital_card_id, status,
                    created_at_ms)
                VALUES (?, ?, ?, ?, 'pending', ?)
                """, [walletNodeID ?? "", request.requestID, receipt.receipt, token.digitalCardID, Int64(nowMs)])
            _ = try tx.execute(
                "UPDATE eligibility_receipts SET used_by_request_id = ? WHERE receipt = ?",
                [request.requestID, receipt.receipt])
            return .pending(PendingDigitization(requestID: request.requestID, token: token, receipt: receipt))
        }
    }

    private func checkedReceipt(
        _ request: TspV1.DigitizeRequest, walletNodeID: String?, nowMs: UInt64, in tx: Transaction
    ) throws -> EligibilityReceiptRecord {
        guard let receipt = try eligibilityReceipt(request.eligibilityReceipt, in: tx) else {
            throw TSPError(
                .notFound, "the eligibility receipt is unknown; check eligibility again to get a new receipt")
        }
        try receipt.requireChecked(by: walletNodeID)
        guard receipt.walletAccountID == request.walletAccountID else {
            throw TSPError(.permissionDenied, "the eligibility receipt was issued to another wallet account")
        }
        guard receipt.deviceID == (request.device?.deviceID ?? "") else {
            throw TSPError(.permissionDenied, "the eligibility receipt was issued for another device")
        }
        guard receipt.usedByRequestID == nil else {
            throw TSPError(
                .failedPrecondition,
                "the eligibility receipt was already exchanged for a token by another request; check eligibility "
                    + "again to add the card once more")
        }
        guard receipt.expiresAtMs > nowMs else {
            throw TSPError(.failedPrecondition, "the eligibility receipt has expired; check eligibility again")
        }
        if let termsID = receipt.termsID {
            // Each missing or wrong part named: one message for all three sent a wallet looking for which.
            // Every missing or wrong part named at once: one message for all sent a wallet looking for which, and
            // one part at a time had it fix them one call after another.
            var problems: [String] = []
            if request.acceptedTermsID.isEmpty {
                problems.append("send accepted_terms_id \"\(termsID)\"")
            } else if request.acceptedTermsID != termsID {
                problems.append(
                    "accepted_terms_id \"\(request.acceptedTermsID)\" is not the terms and conditions the "
                        + "eligibility check gave (\"\(termsID)\")")
            }
            if request.termsAcceptedAtMs == 0 {
                problems.append("send terms_accepted_at_ms (when the cardholder accepted them)")
            } else if request.termsAcceptedAtMs > nowMs + 5 * 60_000 {
                problems.append(
                    // The date beside the number: a number of 13 digits or more reads as a card number, and is
                    // masked on its way out.
                    "terms_accepted_at_ms \(request.termsAcceptedAtMs) (\(Self.utcDate(ms: request.termsAcceptedAtMs))) "
                        + "is in the future; give when the cardholder accepted them, in milliseconds since "
                        + "1970-01-01 UTC")
            }
            guard problems.isEmpty else {
                throw TSPError(
                    .failedPrecondition,
                    "the cardholder must accept the terms and conditions \"\(termsID)\" first: "
                        + problems.joined(separator: "; "))
            }
        }
        return receipt
    }

    /// Step two of Digitize, in one transaction: records the decision on the token and its event, and stores the
    /// answer under the request id. If another attempt finished first, its answer wins. A token that is not
    /// declined replaces the card's earlier tokens on the device still waiting for ID&V (`replaceStepUps`): they
    /// are deactivated in the same transaction and returned, for their parties to be told.
    func finishDigitization(
        _ pending: PendingDigitization, outcome: DigitizationOutcome, advice: TspV1.StandInAdviceBody? = nil,
        traceID: String, nowMs: UInt64
    ) throws -> Journaled<(response: TspV1.DigitizeResponse, replaced: [TokenStateChange])> {
        // The tokens it replaces are told CARD_STATE DEACTIVATED (REPLACED), journaled with the change, and so is the
        // stand-in's advice to the issuer when the stand-in decided (not when the digitization was done before).
        var advised = false
        var overruled: TokenRecord?
        return try journaling(
            { tx in
                guard
                    let row = try tx.queryOne(
                        "SELECT status, response FROM digitize_requests WHERE digital_card_id = ?",
                        [pending.token.digitalCardID])
                else { throw TSPError(.internal, "a pending digitization disappeared") }
                if try row.text(0) == "done" {
                    return (try TspV1.DigitizeResponse(serializedBytes: try row.get(1, as: [UInt8].self)), [])
                }
                let pan = try pending.receipt.card.pan()
                // The token as it stands now: it may have been deleted while the issuer decided (by the TSP, its
                // issuer or its wallet). A decision that came after must not bring it back: the late approval made
                // a deleted token ACTIVE again, at the TSP alone, and payments on it were approved.
                guard
                    var token = try tx.queryOne(
                        "SELECT \(Self.tokenColumns) FROM tokens WHERE digital_card_id = ?",
                        [pending.token.digitalCardID]
                    ).map(Self.token(from:))
                else { throw TSPError(.internal, "a pending digitization lost its token") }
                var outcome = outcome
                // Deleted before this decision: while the issuer decided, or before a retry that resumed it (then the
                // outcome says so already).
                let deletedBefore = token.state == .deactivated
                if deletedBefore, pending.token.state != .deactivated {
                    let deletion = try tx.queryOne(
                        """
                        SELECT actor, reason FROM token_events WHERE digital_card_id = ? AND to_state = ?
                        ORDER BY id DESC LIMIT 1
                        """, [token.digitalCardID, TokenLifecycleStateMachine.State.deactivated.rawValue])
                    outcome = .deletedBeforeDecision(
                        by: try deletion?.text(0) ?? "tsp", reason: try deletion?.text(1) ?? "",
                        decided: outcome.decision)
                }
                // Eligibility refuses a card already live in this wallet account on this device, but two cards added
                // before either was digitized both passed it, and each became an ACTIVE token. Checked again here, in
                // the transaction that makes the token live, so only one of them does.
                if outcome.state != .deactivated,
                    try !sameCardTokens(
                        tx, of: pan, walletNodeID: token.walletNodeID, walletAccountID: token.walletAccountID,
                        deviceID: token.deviceID, except: token.digitalCardID, states: [.active, .suspended]
                    ).isEmpty
                {
                    // The issuer recorded the token as its card's when it approved or stepped it up: it is told of
                    // the decline below, or it would count the token among the card's live ones.
                    if outcome.decidedBy == "issuer" { overruled = token }
                    outcome = .alreadyProvisioned(panLast4: token.panLast4)
                }
                advised = outcome.isStandIn
                var lifecycle = TokenLifecycleStateMachine(state: token.state)
                switch outcome.state {
                case .active: _ = lifecycle.activate()
                case .deactivated: _ = lifecycle.delete()
                case .inactive, .suspended: break
                }
                let from = token.state
                // A token deleted meanwhile is left as its delete left it (state, version, who decided): only the
                // history says that a decision came after.
                if !deletedBefore {
                    token.state = lifecycle.state
                    token.stateVersion += 1
                    token.decidedBy = outcome.decidedBy
                    token.issuerAccountID = outcome.accountID
                    _ = try tx.execute(
                        """
                        UPDATE tokens SET state = ?, state_version = state_version + 1, decided_by = ?,
                            issuer_account_id = ?, updated_at_ms = ?
                        WHERE digital_card_id = ?
                        """,
                        [token.state.rawValue, outcome.decidedBy, outcome.accountID, Int64(nowMs), token.digitalCardID])
                }
                if overruled != nil { overruled = token }
                // `decided_by` keeps the bare party; the history names the issuer as its other rows do (`TokenActor`).
                let actor = outcome.decidedBy == "issuer" ? TokenActor.issuer(token.issuerID) : outcome.decidedBy
                try recordEvent(
                    tx, token: token.digitalCardID, from: from, to: token.state, actor: actor, reason: outcome.reason,
                    traceID: traceID, nowMs: nowMs)
                try insertIdvMethods(tx, token.digitalCardID, outcome.idvMethods)
                // A new token of the card (live, or waiting for its own step-up) supersedes one the cardholder left
                // waiting: two tokens waiting for ID&V could otherwise both be activated, and abandoned ones pile up.
                let replaced =
                    token.state == .deactivated
                    ? [] : try replaceStepUps(tx, by: token, pan: pan, traceID: traceID, nowMs: nowMs)
                var response = Self.response(token: token, outcome: outcome)
                // The node that registered the issuer now: its issuer app is the one the wallet shows the token to.
                let issuerNode = try tx.queryOne("SELECT peer_node_id FROM issuers WHERE id = ?", [token.issuerID])
                response.issuerNodeID = try issuerNode?.get(0, as: String?.self) ?? ""
                _ = try tx.execute(
                    "UPDATE digitize_requests SET status = 'done', response = ? WHERE digital_card_id = ?",
                    [try response.serializedBytes(), pending.token.digitalCardID])
                // The issuer has decided: the card's security code is not kept past it (TSPStore+CardDataRetention).
                try forgetSecurityCode(
                    pending.receipt.card, table: "eligibility_receipts", keyColumn: "receipt",
                    key: pending.receipt.receipt, rowID: "receipt:\(pending.receipt.receipt)", in: tx)
                return (response, replaced)
            },
            announce: { result in
                result.replaced.flatMap { TSPService.cardState($0, reason: "REPLACED", initiator: "tsp") }
                    + (advised ? TSPService.standInAdvice(advice, digitalCardID: pending.token.digitalCardID) : [])
                    + (overruled.map(TSPService.issuerApprovalOverruled) ?? [])
            })
    }

    static func response(token: TokenRecord, outcome: DigitizationOutcome) -> TspV1.DigitizeResponse {
        var response = TspV1.DigitizeResponse()
        response.decision = outcome.decision
        response.tokenState = token.state.wire
        response.stateVersion = token.stateVersion
        response.scheme = token.scheme.wire
        response.panLast4 = token.panLast4
        response.decidedBy = outcome.decidedBy
        response.issuerID = token.issuerID
        if outcome.decision == .declined {
            response.declineReason = outcome.declineReason
        } else {
            response.digitalCardID = token.digitalCardID
            response.tokenLast4 = token.tokenLast4
            response.tokenExpiry = token.tokenExpiry
            response.idvMethods = outcome.idvMethods
            response.paymentAccountReference = token.paymentAccountReference ?? ""
        }
        return response
    }
}

extension TSPStore {
    /// `ms` since 1970 as an ISO 8601 date and time in UTC, for messages; a value past what a date holds is named
    /// as such.
    static func utcDate(ms: UInt64) -> String {
        guard ms <= 253_402_300_799_999 else { return "after the year 9999" }
        return Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601)
    }
}
