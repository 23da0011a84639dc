import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerCardCare`: the issuer's operators act on cards already in wallets. Token state changes
/// (of the tokens named, or of every token of a card, at most `LifecycleLimits.issuerBatch` a TSP call) and messages
/// are forwarded to the TSP; a renewal reserves the new number in the issuer's own store, then tells
/// the TSP, which keeps the tokens working on the renewed card, and the card takes the number once the TSP has
/// answered (`RenewalPlan`); a renewal left pending by a lost answer is repeated, abandoned or forced complete by
/// what the TSP says its tokens hold (`RenewalResolution`, IssuerCardCareService+Resolution.swift). Tokens known
/// deleted are left out of both, and a token the TSP refuses for good does not hold a renewal back (`RenewalSent`).
struct IssuerCardCareService: IssuerV1.IssuerCardCare.ServiceProtocol {
    let store: IssuerStore
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date
    let renewals = CardsUnderWay()
    let tokenChanges = CardsUnderWay()
    /// Asks `retryPendingTokenChanges` to make the pending changes of cards' tokens now (a block or opening left one).
    let pendingTokenChangesLeft = StreamOpenedSignal()

    func renewCard(_ request: IssuerV1.IssuerRenewCardRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerRenewCardResponse
    {
        guard !request.cardID.isEmpty else { throw RPCError(.invalidArgument, "card_id is required") }
        guard !(request.abandon && request.forceComplete) else {
            throw RPCError(.invalidArgument, "give abandon or force_complete, not both")
        }
        if request.abandon || request.forceComplete {
            let word = request.abandon ? "abandon" : "force_complete"
            guard request.pan.isEmpty, request.expiry.isEmpty else {
                throw RPCError(
                    .invalidArgument, "\(word) takes no pan or expiry: it settles the card's pending renewal")
            }
            return try await settlePendingRenewal(
                of: request.cardID, request.abandon ? .abandon : .forceComplete,
                log: logger.withTraceID(context.traceID))
        }
        guard !request.pan.isEmpty || !request.expiry.isEmpty else {
            throw RPCError(.invalidArgument, "give a new pan, a new expiry (MM/YY), or both")
        }
        guard let card = try store.card(id: request.cardID) else {
            throw RPCError(
                .notFound,
                "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards (tokenet issuer cards)")
        }
        // Typed by an operator from the new card: spaces or hyphens between its groups, as printed, are taken, as
        // the wallet takes them when a cardholder adds a card (`PAN.digits(typed:)`).
        guard let digits = PAN.digits(typed: request.pan) else {
            throw RPCError(
                .invalidArgument, "the renewed card is not valid: the card number may hold only \(PAN.typedForm)")
        }
        let pan: PAN
        let expiry: CardExpiry
        do {
            pan = digits.isEmpty ? card.pan : try PAN(digits)
            expiry = request.expiry.isEmpty ? card.expiry : try CardExpiry(parsing: request.expiry)
        } catch {
            throw RPCError(.invalidArgument, "the renewed card is not valid: \(error.message)")
        }
        // A renewal replaces the card behind working tokens; an expiry already past would leave them on a card that
        // cannot pay, which no wallet would have been allowed to add in the first place.
        guard !expiry.hasPassed(asOf: now()) else {
            throw RPCError(
                .invalidArgument,
                "the renewed card would have expired at the end of \(expiry); a renewal needs an expiry that has not passed"
            )
        }
        // The card's own number and expiry change nothing: sent, every token would be "renewed" to the card it has
        // and its wallet and app told so. A pending renewal is repeated with its own values, which differ.
        guard pan != card.pan || expiry != card.expiry || card.pendingRenewal != nil else {
            throw RPCError(
                .invalidArgument,
                "card \(card.id) already has the number ending \(pan.last4) and expiry \(expiry); give a new number, "
                    + "a new expiry, or both")
        }
        guard pan.scheme == card.pan.scheme else {
            throw RPCError(
                .failedPrecondition, "card \(card.id) is \(card.pan.scheme); a renewal keeps the scheme")
        }
        guard renewals.begin(card.id) else {
            throw RPCError(
                .aborted, "a renewal of card \(card.id) is under way; try again once it has finished")
        }
        defer { renewals.end(card.id) }
        let log = logger.withTraceID(context.traceID)
        let renewal = PendingRenewal(pan: pan, expiry: expiry)
        let (tokens, deleted, unknown) = try store.tokens(ofCard: card.id)
        guard !tokens.isEmpty else {
            // No live token stands for the card, so the TSP has nothing to move and the card changes in one write.
            try await IssuerError.mapping { () throws(IssuerError) in
                try store.renewCard(id: card.id, pan: pan, expiry: expiry, at: now())
            }
            log.info(
                "card renewed",
                [
                    "card": card.id, "last4": pan.last4, "tokens": "0", "deleted": "\(deleted.count)",
                    "unknown": "\(unknown.count)",
                ])
            return IssuerV1.IssuerRenewCardResponse(
                cardID: card.id, maskedPAN: pan.masked, expiry: expiry.description, renewedDigitalCardIds: [],
                deletedTokensSkipped: Int32(deleted.count), unknownTokensSkipped: Int32(unknown.count))
        }
        // Everything that can fail without the TSP's part comes before the reservation, which then has to be settled.
        let caller = try tspCaller()
        let encrypted = try await encryptedForTSP(card, renewal)
        let plan = try await IssuerError.mapping { () throws(IssuerError) in
            try store.reserveRenewal(id: card.id, pan: pan, expiry: expiry, at: now())
        }
        if plan == .resume {
            log.info("repeating a pending renewal", ["card": card.id, "last4": pan.last4])
            return try await resolve(
                .complete, card, renewal, tokens: tokens, skipped: (deleted.count, unknown.count), caller: caller,
                encrypted: encrypted, log: log)
        }
        let sent = await send(card, encrypted, tokens: tokens, caller: caller, log: log)
        if let failure = sent.failure {
            throw try await settleFailedRenewal(card.id, renewal, sent.settlement, after: failure, sent: sent, log: log)
        }
        try await IssuerError.mapping { () throws(IssuerError) in
            try store.settleRenewal(id: card.id, renewal, .complete)
        }
        let skipped = deleted.count + sent.deleted.count
        log.info(
            "card renewed",
            [
                "card": card.id, "last4": pan.last4, "tokens": "\(sent.renewed.count)",
                "refused": "\(sent.refused.count)", "deleted": "\(skipped)", "unknown": "\(unknown.count)",
            ])
        return IssuerV1.IssuerRenewCardResponse(
            cardID: card.id, maskedPAN: pan.masked, expiry: expiry.description, renewedDigitalCardIds: sent.renewed,
            notRenewedDigitalCardIds: sent.refused, deletedTokensSkipped: Int32(skipped),
            unknownTokensSkipped: Int32(unknown.count))
    }

    func sendMessage(_ request: IssuerV1.IssuerSendMessageRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerSendMessageResponse
    {
        let response = try await TspV1.IssuerCardUpdates.Client(try tspCaller()).sendCardMessage(
            TspV1.SendCardMessageRequest(
                digitalCardID: request.digitalCardID, title: request.title, body: request.body,
                action: request.action))
        logger.withTraceID(context.traceID).info(
            "message sent to the cardholder",
            ["digital_card_id": request.digitalCardID, "message_id": response.messageID])
        return IssuerV1.IssuerSendMessageResponse(messageID: response.messageID)
    }

    /// Records the tokens the TSP answered as deleted, so that card-wide changes and renewals leave them out. The
    /// TSP has acted by then, so a record that cannot be written is logged, not answered: the token is only sent
    /// again and refused as deleted once more.
    func noteDeleted(_ ids: [String], log: Logger) {
        guard !ids.isEmpty else { return }
        do {
            try store.recordDeletedTokens(ids, at: now())
        } catch {
            log.warning("cannot record deleted tokens", ["tokens": "\(ids.count)", "error": error.message])
        }
    }

    /// Records the tokens the TSP answered NOT_FOUND, so that card-wide changes and renewals leave them out as they
    /// do deleted ones (`noteDeleted`, whose reasons for logging a failed record hold here too). Only a token the
    /// issuer heard of from the TSP is recorded (`IssuerStore.tokensHeardFromTSP`): an id neither knows is an
    /// operator's typo, which would otherwise stay in `unknown_tokens` for good; those are returned, for their
    /// answers to say so. Only the tokens recorded now are logged at info: one asked about again with recheck_unknown
    /// and still unknown keeps its record and first time, and says so at debug.
    @discardableResult
    func noteUnknown(_ ids: [String], log: Logger) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        do {
            let heard = try store.tokensHeardFromTSP(ids)
            let neverHeard = ids.filter { !heard.contains($0) }
            if !neverHeard.isEmpty {
                log.info(
                    "token ids neither the TSP nor the issuer knows, not recorded",
                    ["tokens": neverHeard.joined(separator: ",")])
            }
            let recorded = try store.recordUnknownTokens(ids.filter(heard.contains), at: now())
            if !recorded.isEmpty {
                log.info("tokens the TSP does not know recorded", ["tokens": recorded.joined(separator: ",")])
            }
            let already = ids.filter { heard.contains($0) && !recorded.contains($0) }
            if !already.isEmpty {
                log.debug(
                    "tokens recorded unknown to the TSP are still unknown to it",
                    ["tokens": already.joined(separator: ",")])
            }
            return Set(neverHeard)
        } catch {
            log.warning("cannot record tokens unknown to the TSP", ["tokens": "\(ids.count)", "error": error.message])
            return []
        }
    }

    /// Forgets as unknown the tokens the TSP answered about (`IssuerStore.noteKnownToTSP`).
    func noteKnown(_ ids: [String], log: Logger) {
        store.noteKnownToTSP(ids, why: "a TSP answer", log: log)
    }

    func tspCaller() throws -> any RPCCaller {
        guard let caller = tsp.caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        return caller
    }
}

/// The TSP's limits the issuer keeps to.
enum LifecycleLimits {
    /// Tokens per issuer call (ChangeIssuerTokenStates, RenewCard, GetFundingCards). It bounds one request's work at
    /// the TSP, not what the issuer acts on: a card's tokens go in as many calls as they need (`batches`).
    static let issuerBatch = 10

    /// `ids` cut into the TSP's batches, in order: every id in exactly one batch of at most `issuerBatch`.
    static func batches(_ ids: [String]) -> [[String]] {
        stride(from: 0, to: ids.count, by: issuerBatch).map { Array(ids[$0..<min($0 + issuerBatch, ids.count)]) }
    }
}
