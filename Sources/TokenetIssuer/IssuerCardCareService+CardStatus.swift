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
        let log = logger.withTraceID(context.traceID)
        let reason = request.reasonCode.isEmpty ? Self.openedReason : request.reasonCode
        let changed = try store.setBlocked(
            cardID: card.id, reason: request.blocked ? reason : nil,
            atMs: UInt64(max(0, now().timeIntervalSince1970 * 1000)))
        log.info(
            request.blocked ? "card blocked" : "card opened",
            [
                "card": card.id, "last4": card.pan.last4, "reason": reason, "changed": "\(changed)",
                "tokens": action.protoValueName ?? "\(action.rawValue)",
            ])
        var response = IssuerV1.IssuerSetCardStatusResponse(
            cardID: card.id, blocked: request.blocked, blockedReason: request.blocked ? reason : "",
            changed: changed)
        let lifecycleAction: TspV1.LifecycleAction
        switch action {
        case .suspend: lifecycleAction = .suspend
        case .delete: lifecycleAction = .delete
        case .resume: lifecycleAction = .resume
        default: return response
        }
        let changedTokens = try await changeTokenStates(
            IssuerV1.IssuerChangeTokenStatesRequest(action: lifecycleAction, reasonCode: reason, cardID: card.id),
            context: context)
        response.results = changedTokens.results
        response.deletedTokensSkipped = changedTokens.deletedTokensSkipped
        response.unknownTokensSkipped = changedTokens.unknownTokensSkipped
        guard action == .suspend else { return response }
        // A token waiting for ID&V cannot be suspended; left INACTIVE, a code could still activate it.
        let waiting = changedTokens.results.filter { $0.statusCode != 0 && $0.tokenState == .inactive }
            .map(\.digitalCardID)
        guard !waiting.isEmpty else { return response }
        let deleted = try await changeTokenStates(
            IssuerV1.IssuerChangeTokenStatesRequest(digitalCardIds: waiting, action: .delete, reasonCode: reason),
            context: context)
        let byID = Dictionary(deleted.results.map { ($0.digitalCardID, $0) }, uniquingKeysWith: { first, _ in first })
        response.results = response.results.map { byID[$0.digitalCardID] ?? $0 }
        return response
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
