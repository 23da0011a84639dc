import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerCardCare`: the issuer's operators act on cards already in wallets. Token state changes
/// and messages are forwarded to the TSP; a renewal updates the issuer's own card first, then tells the TSP, which
/// keeps the tokens working on the renewed card.
struct IssuerCardCareService: IssuerV1.IssuerCardCare.ServiceProtocol {
    let store: IssuerStore
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date

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
        if pan != card.pan { try await checkNewNumber(pan) }
        let tokens = try store.digitalCardIDs(ofCard: card.id)
        var renewed: [String] = []
        if !tokens.isEmpty {
            let key = try await tsp.keyForPushing()
            let data = CardData(pan: pan, expiry: expiry, cvv2: card.cvc, name: card.cardholderName)
            let encrypted: CardV1.EncryptedCardData
            do {
                encrypted = CardV1.EncryptedCardData(
                    jwe: try JWE.encrypt(data, to: key, kid: key.kid), publicKeyIdentifier: key.kid)
            } catch {
                throw RPCError(.internal, "cannot encrypt the renewed card to the TSP's key: \(error.message)")
            }
            renewed =
                try await TspV1.IssuerCardUpdates.Client(try tspCaller()).renewCard(
                    TspV1.RenewCardRequest(
                        digitalCardIds: Array(tokens.suffix(LifecycleLimits.issuerBatch)), cardData: encrypted,
                        previousCardID: card.id, newCardID: card.id)
                ).renewedDigitalCardIds
        }
        try await IssuerError.mapping { () throws(IssuerError) in
            try store.renewCard(id: card.id, pan: pan, expiry: expiry)
        }
        logger.withTraceID(context.traceID).info(
            "card renewed", ["card": card.id, "last4": pan.last4, "tokens": "\(renewed.count)"])
        return IssuerV1.IssuerRenewCardResponse(
            cardID: card.id, maskedPAN: pan.masked, expiry: expiry.description, renewedDigitalCardIds: renewed)
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

    /// The checks the fixture loader makes on a card number, made on a renewed one too: a number outside the issuer's
    /// BIN ranges is not the issuer's to give (the TSP would route its tokens elsewhere), and a number another card
    /// carries would leave the issuer unable to tell the two cards apart. The store checks the second again when it
    /// writes, against a renewal racing this one.
    private func checkNewNumber(_ pan: PAN) async throws {
        let profile = try await IssuerError.mapping { () throws(IssuerError) in try store.profile() }
        if let profile, !profile.binRanges.contains(where: { $0.contains(pan.digits) }) {
            let ranges = profile.binRanges.map { "\($0.low)-\($0.high)" }.joined(separator: ", ")
            throw RPCError(
                .invalidArgument,
                "the card number ending \(pan.last4) is outside the issuer's BIN ranges (\(ranges))")
        }
        let holder = try await IssuerError.mapping { () throws(IssuerError) in try store.card(matching: pan) }
        if let holder {
            throw RPCError(.alreadyExists, IssuerStore.numberInUse(pan, by: holder.id))
        }
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
