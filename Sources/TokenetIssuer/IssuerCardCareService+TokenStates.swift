import TokenetNode
import TokenetRPC
import TokenetWire

/// Token state changes asked by the issuer's operators: the tokens named, or every token of a card, sent to the TSP
/// at most `LifecycleLimits.issuerBatch` a call and answered with every call's results (`TokenStateBatches`), so a
/// card with more tokens than one call takes is suspended (or resumed, or deleted) whole. A card's tokens known
/// deleted or unknown to the TSP are left out (the TSP would refuse each), a token named one by one that the issuer
/// knows is gone is refused in its own result without asking the TSP, and the tokens the TSP answers as deleted or
/// does not know are recorded so. With `recheck_unknown`, the tokens recorded unknown are sent anyway (the operator's
/// way out once the TSP knows such a token), and the record of each the TSP answers about is dropped.
extension IssuerCardCareService {
    func changeTokenStates(_ request: IssuerV1.IssuerChangeTokenStatesRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerChangeTokenStatesResponse
    {
        try await changeTokenStates(request, log: logger.withTraceID(context.traceID))
    }

    /// `ChangeTokenStates`, logged to `log`, each call to the TSP made with `options` (inside a served call, the
    /// served call's remaining deadline applies too).
    func changeTokenStates(
        _ request: IssuerV1.IssuerChangeTokenStatesRequest, log: Logger, options: CallOptions = CallOptions()
    ) async throws -> IssuerV1.IssuerChangeTokenStatesResponse {
        let (ids, skipped) = try tokensToChange(request)
        let client = TspV1.TokenLifecycle.Client(try tspCaller())
        var batches = TokenStateBatches(skippedDeleted: skipped.deleted, skippedUnknown: skipped.unknown)
        // Named one by one, a token known gone is still answered, by the issuer: the operator named it, so it is
        // refused by name rather than left out of the answer.
        // With recheck_unknown, only a deleted token is: one recorded unknown is asked about again.
        let gone = (request.cardID.isEmpty ? try store.goneTokens(ids) : [:]).filter {
            !(request.recheckUnknown && $0.value.isUnknownToTSP)
        }
        for id in ids {
            guard let why = gone[id] else { continue }
            batches.refusedByIssuer(TokenStateBatches.refusal(of: id, why, deleting: request.action == .delete))
        }
        for batch in LifecycleLimits.batches(ids.filter { gone[$0] == nil }) {
            do {
                batches.answered(
                    try await client.changeIssuerTokenStates(
                        TspV1.ChangeIssuerTokenStatesRequest(
                            digitalCardIds: batch, action: request.action, reasonCode: request.reasonCode),
                        options: options))
            } catch {
                batches.failed(batch, error as? RPCError ?? RPCError(.unavailable, String(describing: error)))
            }
        }
        noteDeleted(batches.deleted, log: log)
        batches.neverHeardOf(noteUnknown(batches.unknown, log: log))
        noteKnown(batches.known, log: log)
        log.info(
            "token states changed at the TSP",
            [
                "action": request.action.protoValueName ?? "?", "reason": request.reasonCode,
                "card": request.cardID, "tokens": "\(ids.count)",
                "refused": "\(batches.results.filter { $0.statusCode != 0 }.count)",
                "refused_known_gone": "\(gone.count)", "skipped_deleted": "\(skipped.deleted)",
                "skipped_unknown": "\(skipped.unknown)", "recheck_unknown": "\(request.recheckUnknown)",
            ])
        return try batches.answer(in: ids)
    }

    /// The most tokens one request may name: each 10 cost a TSP call, made one after another within the request's
    /// deadline, so a request naming a million would hold the service (and the TSP) for as long as it likes.
    static let maximumNamedTokens = 1000

    /// The tokens `request` names: its digital card ids, or every token of its card not known deleted or unknown to
    /// the TSP (unknown ones included with `recheck_unknown`), with how many of the card's were left out as each.
    func tokensToChange(_ request: IssuerV1.IssuerChangeTokenStatesRequest) throws
        -> (ids: [String], skipped: (deleted: Int, unknown: Int))
    {
        guard request.digitalCardIds.isEmpty != request.cardID.isEmpty else {
            throw RPCError(
                .invalidArgument,
                "give digital_card_ids or a card_id (every token of the card)"
                    + (request.cardID.isEmpty ? "; the request names neither" : ", not both"))
        }
        guard request.cardID.isEmpty else {
            guard try store.card(id: request.cardID) != nil else {
                throw RPCError(
                    .notFound,
                    "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards (tokenet issuer cards)")
            }
            let tokens = try store.tokens(ofCard: request.cardID)
            guard request.recheckUnknown else { return (tokens.live, (tokens.deleted.count, tokens.unknown.count)) }
            return (tokens.live + tokens.unknown, (tokens.deleted.count, 0))
        }
        guard request.digitalCardIds.count <= Self.maximumNamedTokens else {
            throw RPCError(
                .invalidArgument,
                "\(request.digitalCardIds.count) digital_card_ids: at most \(Self.maximumNamedTokens) in one request; "
                    + "give a card_id for every token of a card, or send several requests")
        }
        guard !request.digitalCardIds.contains("") else {
            throw RPCError(
                .invalidArgument, "digital_card_ids holds an empty id; name each token by its digital card id")
        }
        if let refusal = RepeatedIDs.refusal(of: request.digitalCardIds) { throw RPCError(.invalidArgument, refusal) }
        return (request.digitalCardIds, (0, 0))
    }
}
