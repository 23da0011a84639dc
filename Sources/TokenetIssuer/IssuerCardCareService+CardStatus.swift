import TokenetNode
import TokenetRPC
import TokenetWire

/// A card blocked by the issuer's operator (reported lost or stolen) or opened again (`SetCardStatus`).
///
/// Suspending a card's tokens alone left the card itself as it was: it was added to another wallet, approved and
/// activated, its tokens still waiting for ID&V were sent codes and activated, and a stand-in approval of it stayed
/// live. A blocked card is refused at each of those places (`StoredCard.blockedRefusal`), and its tokens change
/// with it: suspended (those waiting for ID&V, which cannot be suspended and must not be activated, deleted) or
/// deleted; opened again, resumed or left as they are.
extension IssuerCardCareService {
    func setCardStatus(_ request: IssuerV1.IssuerSetCardStatusRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerSetCardStatusResponse
    {
        guard !request.cardID.isEmpty else { throw RPCError(.invalidArgument, "card_id is required") }
        let action: IssuerV1.CardTokensAction =
            request.tokens == .unspecified ? (request.blocked ? .suspend : .keep) : request.tokens
        switch (request.blocked, action) {
        case (true, .resume):
            throw RPCError(
                .invalidArgument, "tokens RESUME goes with opening the card (blocked false), not with blocking it")
        case (false, .suspend), (false, .delete):
            throw RPCError(
                .invalidArgument,
                "tokens SUSPEND and DELETE go with blocking the card; opening it resumes its tokens (RESUME) or "
                    + "keeps them as they are (KEEP)")
        default:
            break
        }
        if request.blocked || !request.reasonCode.isEmpty {
            try Self.checkReason(request.reasonCode)
        }
        guard let card = try store.card(id: request.cardID) else {
            throw RPCError(
                .notFound,
                "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards (tokenet issuer cards)")
        }
        // One making of a card's token change at a time. The card's own status is the issuer's and is recorded at
        // once regardless: a stolen card waited for a retry held by a TSP that did not answer (up to 30 s).
        let claimed = tokenChanges.begin(card.id)
        defer {
            if claimed {
                tokenChanges.end(card.id)
                // A change recorded while this call held the card (a newer block or opening, or this call's own
                // that the TSP did not settle) is made now, not at the next of the retries' times.
                if (try? store.pendingTokenChange(ofCard: card.id)) != nil { pendingTokenChangesLeft.streamOpened() }
            }
        }
        let log = logger.withTraceID(context.traceID)
        let reason = request.reasonCode.isEmpty ? Self.openedReason : request.reasonCode
        let nowMs = UInt64(max(0, now().timeIntervalSince1970 * 1000))
        let tokenAction: TspV1.LifecycleAction? =
            switch action {
            case .suspend: .suspend
            case .delete: .delete
            case .resume: .resume
            default: nil
            }
        // Kept with the block, in its transaction: a stop or a TSP that does not answer before the tokens change
        // leaves it to be made again (`settlePendingTokenChanges`), never a stolen card whose tokens still pay.
        let pending = tokenAction.map { PendingTokenChange(action: $0, reasonCode: reason, sinceMs: nowMs) }
        let changed = try store.setBlocked(
            cardID: card.id, reason: request.blocked ? reason : nil, atMs: nowMs, tokens: pending)
        log.info(
            request.blocked ? "card blocked" : "card opened",
            [
                "card": card.id, "last4": card.pan.last4, "reason": reason, "changed": "\(changed)",
                "tokens": action.protoValueName ?? "\(action.rawValue)",
            ])
        var response = IssuerV1.IssuerSetCardStatusResponse(
            cardID: card.id, blocked: request.blocked, blockedReason: request.blocked ? reason : "",
            changed: changed)
        guard let pending else { return response }
        guard claimed else {
            // Another making of the card's change is under way: this one, recorded, is made after it
            // (`retryPendingTokenChanges`), so the newer change is the last to reach the TSP.
            log.info(
                "the card's token change waits for the one under way", ["card": card.id, "action": pending.actionName])
            pendingTokenChangesLeft.streamOpened()
            response.tokensPending = true
            return response
        }
        // Whatever ends this call (the TSP's failure, the operator's deadline cancelling it), a change left pending
        // is made again on the node's own schedule (the claim's release above asks for it), not only when its
        // stream to the TSP next opens.
        let applied: AppliedTokenChange
        do {
            // Ended a little before the operator's deadline, so that a TSP that does not answer is told as such.
            applied = try await applyTokenChange(pending, toCard: card.id, log: log, options: .answeringInTime)
        } catch let error as RPCError {
            throw RPCError(
                error.code,
                "card \(card.id) is \(request.blocked ? "blocked (\(reason))" : "open"), and the change of its tokens "
                    + "(\(pending.actionName)) is pending: \(error.message). The issuer node makes it again on its own "
                    + "(1, 5 and 30 s later, then every minute, and when its stream to the TSP opens), or now with "
                    + "tokenet issuer sync",
                cause: error)
        }
        response.results = applied.results
        response.deletedTokensSkipped = applied.deletedSkipped
        response.unknownTokensSkipped = applied.unknownSkipped
        response.tokensPending = !applied.settled
        return response
    }

    /// What one making of a card's token change came to.
    struct AppliedTokenChange {
        /// A result per token: suspensions, resumes and deletions first, then the deletions of tokens waiting for
        /// ID&V that a suspension could not reach.
        var results: [TspV1.TokenStateResult]
        var deletedSkipped: Int32
        var unknownSkipped: Int32
        /// Every token has an answer that asking again would not change: the change is no longer pending.
        var settled: Bool
    }

    /// Makes `change` for every token of card `cardID` at the TSP (`changeTokenStates`), deleting the tokens
    /// waiting for ID&V that a suspension cannot reach, and drops the card's pending change once every token's
    /// answer settles it. Throws, the change left pending, when the TSP answered none of the calls.
    func applyTokenChange(
        _ change: PendingTokenChange, toCard cardID: String, log: Logger, options: CallOptions = CallOptions()
    ) async throws -> AppliedTokenChange {
        let changed = try await changeTokenStates(
            IssuerV1.IssuerChangeTokenStatesRequest(
                action: change.action, reasonCode: change.reasonCode, cardID: cardID),
            log: log, options: options)
        var results = changed.results
        // A token waiting for ID&V cannot be suspended; left INACTIVE, a code could still activate it.
        let waiting =
            change.action == .suspend
            ? results.filter { $0.statusCode != 0 && $0.tokenState == .inactive }.map(\.digitalCardID) : []
        if !waiting.isEmpty {
            let deleted = try await changeTokenStates(
                IssuerV1.IssuerChangeTokenStatesRequest(
                    digitalCardIds: waiting, action: .delete, reasonCode: change.reasonCode),
                log: log, options: options)
            let byID = Dictionary(
                deleted.results.map { ($0.digitalCardID, $0) }, uniquingKeysWith: { first, _ in first })
            results = results.map { byID[$0.digitalCardID] ?? $0 }
        }
        let settled = !results.contains { Self.mayPass(StatusCode(rawValue: $0.statusCode)) }
        if settled { try store.settlePendingTokenChange(cardID: cardID, change) }
        return AppliedTokenChange(
            results: results, deletedSkipped: changed.deletedTokensSkipped,
            unknownSkipped: changed.unknownTokensSkipped, settled: settled)
    }

    /// A token's failure that asking again may turn into an answer (the TSP away, busy, or failing), as against a
    /// refusal, which asking again would meet again.
    static func mayPass(_ code: StatusCode) -> Bool {
        switch code {
        case .unavailable, .deadlineExceeded, .resourceExhausted, .aborted, .internal, .unknown, .cancelled:
            true
        default:
            false
        }
    }

    /// The reason a card's tokens are resumed with when it is opened without one.
    static let openedReason = "CARD_UNBLOCKED"

    /// Checks a reason code as the TSP does (the block's reason is kept, and goes with the tokens' changes).
    static func checkReason(_ code: String) throws {
        switch IdentifierRules.reasonCodeProblem(code) {
        case nil:
            return
        case .missing:
            throw RPCError(.invalidArgument, "reason_code is required to block a card, e.g. LOST, STOLEN, FRAUD")
        case .form:
            throw RPCError(.invalidArgument, "reason_code must be 1-64 characters of A-Z, 0-9 and _, e.g. STOLEN")
        case .cardNumber:
            throw RPCError(
                .invalidArgument, "reason_code holds what looks like a card number; give a reason such as STOLEN")
        }
    }
}
