import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerCardCare`: the issuer's operators act on cards already in wallets. Token state changes
/// and messages are forwarded to the TSP; a renewal reserves the new number in the issuer's own store, then tells
/// the TSP, which keeps the tokens working on the renewed card, and the card takes the number once the TSP has
/// answered (`RenewalPlan`).
struct IssuerCardCareService: IssuerV1.IssuerCardCare.ServiceProtocol {
    let store: IssuerStore
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date
    let renewals = RenewalsUnderWay()

    func changeTokenStates(_ request: IssuerV1.IssuerChangeTokenStatesRequest, context: ServerContext) async throws
        -> TspV1.ChangeIssuerTokenStatesResponse
    {
        let response = try await TspV1.TokenLifecycle.Client(try tspCaller()).changeIssuerTokenStates(
            TspV1.ChangeIssuerTokenStatesRequest(
                digitalCardIds: request.digitalCardIds, action: request.action, reasonCode: request.reasonCode))
        logger.withTraceID(context.traceID).info(
            "token states changed at the TSP",
            [
                "action": request.action.protoValueName ?? "?", "reason": request.reasonCode,
                "tokens": "\(request.digitalCardIds.count)",
                "refused": "\(response.results.filter { $0.statusCode != 0 }.count)",
            ])
        return response
    }

    func renewCard(_ request: IssuerV1.IssuerRenewCardRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerRenewCardResponse
    {
        guard !request.cardID.isEmpty else { throw RPCError(.invalidArgument, "card_id is required") }
        guard !request.pan.isEmpty || !request.expiry.isEmpty else {
            throw RPCError(.invalidArgument, "give a new pan, a new expiry (MM/YY), or both")
        }
        guard let card = try store.card(id: request.cardID) else {
            throw RPCError(.notFound, "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards")
        }
        let pan: PAN
        let expiry: CardExpiry
        do {
            pan = request.pan.isEmpty ? card.pan : try PAN(request.pan)
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
        let tokens = try store.digitalCardIDs(ofCard: card.id)
        guard !tokens.isEmpty else {
            // No token stands for the card, so the TSP has nothing to move and the card changes in one write.
            try await IssuerError.mapping { () throws(IssuerError) in
                try store.renewCard(id: card.id, pan: pan, expiry: expiry, at: now())
            }
            log.info("card renewed", ["card": card.id, "last4": pan.last4, "tokens": "0"])
            return IssuerV1.IssuerRenewCardResponse(
                cardID: card.id, maskedPAN: pan.masked, expiry: expiry.description, renewedDigitalCardIds: [])
        }
        // Everything that can fail without the TSP's part comes before the reservation, which then has to be settled.
        let caller = try tspCaller()
        let key = try await tsp.keyForPushing()
        let data = CardData(pan: pan, expiry: expiry, cvv2: card.cvc, name: card.cardholderName)
        let encrypted: CardV1.EncryptedCardData
        do {
            encrypted = CardV1.EncryptedCardData(
                jwe: try JWE.encrypt(data, to: key, kid: key.kid), publicKeyIdentifier: key.kid)
        } catch {
            throw RPCError(.internal, "cannot encrypt the renewed card to the TSP's key: \(error.message)")
        }
        let plan = try await IssuerError.mapping { () throws(IssuerError) in
            try store.reserveRenewal(id: card.id, pan: pan, expiry: expiry, at: now())
        }
        if plan == .resume {
            log.info("repeating a pending renewal", ["card": card.id, "last4": pan.last4])
        }
        let renewed: [String]
        do {
            renewed =
                try await TspV1.IssuerCardUpdates.Client(caller).renewCard(
                    TspV1.RenewCardRequest(
                        digitalCardIds: Array(tokens.suffix(LifecycleLimits.issuerBatch)), cardData: encrypted,
                        previousCardID: card.id, newCardID: card.id)
                ).renewedDigitalCardIds
        } catch {
            throw try await settleFailedRenewal(card.id, renewal, after: error, log: log)
        }
        try await IssuerError.mapping { () throws(IssuerError) in
            try store.settleRenewal(id: card.id, renewal, .complete)
        }
        log.info("card renewed", ["card": card.id, "last4": pan.last4, "tokens": "\(renewed.count)"])
        return IssuerV1.IssuerRenewCardResponse(
            cardID: card.id, maskedPAN: pan.masked, expiry: expiry.description, renewedDigitalCardIds: renewed)
    }

    /// Settles a reserved renewal whose TSP call failed with `error` (`RenewalSettlement`) and returns the error the
    /// operator gets: a refusal gives the number back and the card keeps its own; an unknown outcome keeps the
    /// reservation, says so, and is logged as a warning, since until the renewal is repeated the TSP may hold a
    /// number the issuer's card does not.
    private func settleFailedRenewal(
        _ cardID: String, _ renewal: PendingRenewal, after error: any Error, log: Logger
    ) async throws -> RPCError {
        let settlement = RenewalSettlement(failure: error)
        try await IssuerError.mapping { () throws(IssuerError) in
            try store.settleRenewal(id: cardID, renewal, settlement)
        }
        let status = (error as? RPCError)?.code ?? .unavailable
        let reason = (error as? RPCError)?.message ?? String(describing: error)
        let last4 = renewal.pan.last4
        let statusName = status.protoValueName ?? "\(status.rawValue)"
        if settlement == .release {
            log.info("renewal refused by the TSP", ["card": cardID, "last4": last4, "status": statusName])
            return RPCError(
                status, "the TSP refused the renewal of card \(cardID), which keeps its number and expiry: \(reason)")
        }
        log.warning(
            "renewal pending: the TSP's answer was lost", ["card": cardID, "last4": last4, "status": statusName])
        return RPCError(
            status,
            "the TSP's answer to the renewal of card \(cardID) was lost (\(reason)); the renewal to the number ending "
                + "\(last4), \(renewal.expiry) stays pending: repeat it to complete it")
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

    private func tspCaller() throws -> any RPCCaller {
        guard let caller = tsp.caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        return caller
    }
}

/// The TSP's limits the issuer keeps to.
enum LifecycleLimits {
    /// Tokens per issuer call (ChangeIssuerTokenStates, RenewCard).
    static let issuerBatch = 10
}
