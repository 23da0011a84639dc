import TokenetNode
import TokenetRPC
import TokenetWire

/// Token state changes asked by the issuer's operators: the tokens named, or every token of a card, sent to the TSP
/// at most `LifecycleLimits.issuerBatch` a call and answered with every call's results (`TokenStateBatches`), so a
/// card with more tokens than one call takes is suspended (or resumed, or deleted) whole. A card's tokens known
/// deleted are left out (the TSP would refuse each), and the tokens the TSP answers as deleted are recorded so.
extension IssuerCardCareService {
    func changeTokenStates(_ request: IssuerV1.IssuerChangeTokenStatesRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerChangeTokenStatesResponse
    {
        let (ids, skipped) = try tokensToChange(request)
        let client = TspV1.TokenLifecycle.Client(try tspCaller())
        var batches = TokenStateBatches(skippedDeleted: skipped)
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
        let log = logger.withTraceID(context.traceID)
        noteDeleted(batches.deleted, log: log)
        log.info(
            "token states changed at the TSP",
            [
                "action": request.action.protoValueName ?? "?", "reason": request.reasonCode,
                "card": request.cardID, "tokens": "\(ids.count)",
                "refused": "\(batches.results.filter { $0.statusCode != 0 }.count)", "skipped_deleted": "\(skipped)",
            ])
        return try batches.answer()
    }

    /// The most tokens one request may name: each 10 cost a TSP call, made one after another within the request's
    /// deadline, so a request naming a million would hold the service (and the TSP) for as long as it likes.
    static let maximumNamedTokens = 1000

    /// The tokens `request` names: its digital card ids, or every token of its card not known deleted, with how many
    /// of the card's were left out as deleted.
    func tokensToChange(_ request: IssuerV1.IssuerChangeTokenStatesRequest) throws -> (ids: [String], skipped: Int) {
        guard request.digitalCardIds.isEmpty != request.cardID.isEmpty else {
            throw RPCError(.invalidArgument, "give digital_card_ids or a card_id (every token of the card), not both")
        }
        guard request.cardID.isEmpty else {
            guard try store.card(id: request.cardID) != nil else {
                throw RPCError(.notFound, "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards")
            }
            let tokens = try store.tokens(ofCard: request.cardID)
            return (tokens.live, tokens.deleted.count)
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
        return (request.digitalCardIds, 0)
    }
}
