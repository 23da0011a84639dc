import TokenetNode
import TokenetRPC
import TokenetWire

/// Token state changes asked by the issuer's operators: the tokens named, or every token of a card, sent to the TSP
/// at most `LifecycleLimits.issuerBatch` a call and answered with every call's results (`TokenStateBatches`), so a
/// card with more tokens than one call takes is suspended (or resumed, or deleted) whole.
extension IssuerCardCareService {
    func changeTokenStates(_ request: IssuerV1.IssuerChangeTokenStatesRequest, context: ServerContext) async throws
        -> TspV1.ChangeIssuerTokenStatesResponse
    {
        let ids = try tokensToChange(request)
        let client = TspV1.TokenLifecycle.Client(try tspCaller())
        var batches = TokenStateBatches()
        for batch in LifecycleLimits.batches(ids) {
            do {
                batches.answered(
                    try await client.changeIssuerTokenStates(
                        TspV1.ChangeIssuerTokenStatesRequest(
                            digitalCardIds: batch, action: request.action, reasonCode: request.reasonCode)))
            } catch {
                batches.failed(batch, error as? RPCError ?? RPCError(.unavailable, String(describing: error)))
            }
        }
        logger.withTraceID(context.traceID).info(
            "token states changed at the TSP",
            [
                "action": request.action.protoValueName ?? "?", "reason": request.reasonCode,
                "card": request.cardID, "tokens": "\(ids.count)",
                "refused": "\(batches.results.filter { $0.statusCode != 0 }.count)",
            ])
        return try batches.answer()
    }

    /// The most tokens one request may name: each 10 cost a TSP call, made one after another within the request's
    /// deadline, so a request naming a million would hold the service (and the TSP) for as long as it likes.
    static let maximumNamedTokens = 1000

    /// The tokens `request` names: its digital card ids, or every token of its card.
    func tokensToChange(_ request: IssuerV1.IssuerChangeTokenStatesRequest) throws -> [String] {
        guard request.digitalCardIds.isEmpty != request.cardID.isEmpty else {
            throw RPCError(.invalidArgument, "give digital_card_ids or a card_id (every token of the card), not both")
        }
        guard request.cardID.isEmpty else {
            guard try store.card(id: request.cardID) != nil else {
                throw RPCError(.notFound, "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards")
            }
            return try store.digitalCardIDs(ofCard: request.cardID)
        }
        guard request.digitalCardIds.count <= Self.maximumNamedTokens else {
            throw RPCError(
                .invalidArgument,
                "\(request.digitalCardIds.count) digital_card_ids: at most \(Self.maximumNamedTokens) in one request; "
                    + "give a card_id for every token of a card, or send several requests")
        }
        guard Set(request.digitalCardIds).count == request.digitalCardIds.count else {
            throw RPCError(.invalidArgument, "digital_card_ids names a token more than once")
        }
        return request.digitalCardIds
    }
}
