import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.IssuerCardUpdates`: an issuer renews a card behind its tokens (the tokens keep working; the wallet
/// that holds each and the issuer app are sent CARD_RENEWAL, so both show the new card's last four digits) and sends
/// its cardholders messages about a card. The issuer's messages go out as CPS MESSAGING: the TSP's card
/// component delivers them, so the issuer app's filter processes them like the TSP's own.
struct IssuerCardUpdatesService: TspV1.IssuerCardUpdates.ServiceProtocol {
    let tsp: TSPService

    func renewCard(_ request: TspV1.RenewCardRequest, context: ServerContext) async throws -> TspV1.RenewCardResponse {
        try await tsp.handling("RenewCard", context) { log in
            guard !request.digitalCardIds.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_ids is required: the tokens of the renewed card")
            }
            guard request.digitalCardIds.count <= LifecycleService.maximumIssuerBatch else {
                throw TSPError(
                    .invalidArgument, "at most \(LifecycleService.maximumIssuerBatch) tokens per renewal")
            }
            // As ChangeIssuerTokenStates and GetFundingCards refuse it: the renewal listed such a token twice.
            if let refusal = RepeatedIDs.refusal(of: request.digitalCardIds) {
                throw TSPError(.invalidArgument, refusal)
            }
            // Carried to the wallets and the issuer app in CARD_RENEWAL: an id no listing could show (a line break,
            // a card number) or one of 40 KB, which made the message too large to send after the renewal stood.
            for (field, id) in [("previous_card_id", request.previousCardID), ("new_card_id", request.newCardID)]
            where !id.isEmpty {
                if let problem = IdentifierRules.problem(id) {
                    throw TSPError(.invalidArgument, "\(field) must be \(problem), or left empty")
                }
            }
            let card = try tsp.decryptCardData(request.cardData, field: "card_data")
            let pan: PAN
            do { pan = try card.pan() } catch {
                throw TSPError(.invalidArgument, "the renewed card number is not valid: \(TSPError.describe(error))")
            }
            // The renewed card's expiry goes to the wallets and the issuer app, and replaces the token's funding
            // card's: an impossible one (month 13, year 1999) or a past one was taken and shown as "13/31".
            let cardExpiry: CardExpiry
            do { cardExpiry = try card.expiry() } catch {
                throw TSPError(
                    .invalidArgument,
                    "the renewed card's expiry (month \"\(card.expirationDate.month)\", year "
                        + "\"\(card.expirationDate.year)\") is not valid: give two digits for the month (01 to 12) and "
                        + "four for the year (2000 to 2099)")
            }
            guard !cardExpiry.hasPassed(asOf: tsp.now()) else {
                throw TSPError(
                    .invalidArgument,
                    "the renewed card expired at the end of \(cardExpiry); a renewal gives the card's new expiry")
            }
            let expiry = "\(card.expirationDate.month)/\(card.expirationDate.year.suffix(2))"
            let authorize = try tsp.requireIssuer(context.peer?.nodeID)
            // A card is renewed into its own issuer's ranges, as the TSP registers issuers by them: another
            // issuer's number (or one no issuer registered) made the token pay with a card that is not its issuer's,
            // and kept that card out of every wallet the token is in ("already in this wallet").
            let owned = try tsp.store.issuerIDs(registeredBy: context.peer?.nodeID)
            guard let owner = try tsp.store.issuer(owning: pan), owned.contains(owner.id) else {
                throw TSPError(
                    .invalidArgument,
                    "the renewed card number (ending \(pan.last4)) is outside the BIN ranges this node registered; "
                        + "renew a card into its own issuer's ranges")
            }
            let body = TspV1.CardRenewalBody(
                previousCardID: request.previousCardID, newCardID: request.newCardID, panLast4: pan.last4,
                expiry: expiry)
            let journaled = try tsp.store.renewFundingCard(
                request.digitalCardIds, pan: pan, expiry: cardExpiry, actor: TokenActor.issuer(owner.id),
                traceID: context.traceID, nowMs: tsp.nowMs,
                announce: { renewed in
                    renewed.map { token in
                        Announcement(
                            notification: D1.notification(
                                .cardRenewal, from: .cps, cardID: token.digitalCardID, body: .cardRenewal(body)),
                            recipients: [.wallet, .issuerApp])
                    }
                },
                authorize: authorize,
                check: { token in
                    guard token.issuerID == owner.id else {
                        throw TSPError(
                            .failedPrecondition,
                            "token \"\(token.digitalCardID)\" is a card of issuer \(token.issuerID); the renewed card is "
                                + "issuer \(owner.id)'s")
                    }
                    guard token.scheme == pan.scheme else {
                        throw TSPError(
                            .failedPrecondition,
                            "token \"\(token.digitalCardID)\" is \(token.scheme); the renewed card is \(pan.scheme)")
                    }
                })
            let (renewed, results, _) = journaled.value
            log.info(
                "card renewed",
                ["tokens": "\(renewed.count)", "refused": "\(results.count - renewed.count)", "last4": pan.last4])
            await tsp.published(journaled, log: log)
            return TspV1.RenewCardResponse(
                renewedDigitalCardIds: renewed.map(\.digitalCardID), panLast4: pan.last4, expiry: expiry,
                results: results)
        }
    }

    /// What the TSP holds for the issuer's tokens, so that the issuer can settle a renewal whose answer it lost by
    /// what the TSP did rather than by guessing. The issuer's candidate number comes encrypted and the answer says
    /// only whether it matches, so no card number crosses the wire in clear.
    func getFundingCards(_ request: TspV1.GetFundingCardsRequest, context: ServerContext) async throws
        -> TspV1.GetFundingCardsResponse
    {
        try await tsp.handling("GetFundingCards", context) { log in
            let ids = request.digitalCardIds
            guard !ids.isEmpty, ids.count <= LifecycleService.maximumIssuerBatch else {
                throw TSPError(
                    .invalidArgument, "give 1 to \(LifecycleService.maximumIssuerBatch) digital_card_ids")
            }
            if let refusal = RepeatedIDs.refusal(of: ids) { throw TSPError(.invalidArgument, refusal) }
            let authorize = try tsp.requireIssuer(context.peer?.nodeID)
            var pan: PAN?
            if request.cardData != nil {
                let card = try tsp.decryptCardData(request.cardData, field: "card_data")
                do { pan = try card.pan() } catch {
                    throw TSPError(.invalidArgument, "the card number is not valid: \(TSPError.describe(error))")
                }
            }
            let cards = try tsp.store.fundingCards(ids, comparedWith: pan, authorize: authorize)
            log.info(
                "funding cards read",
                [
                    "tokens": "\(ids.count)", "matching": "\(cards.filter(\.panMatches).count)",
                    "refused": "\(cards.filter { $0.statusCode != 0 }.count)",
                ])
            return TspV1.GetFundingCardsResponse(fundingCards: cards)
        }
    }

    func sendCardMessage(_ request: TspV1.SendCardMessageRequest, context: ServerContext) async throws
        -> TspV1.SendCardMessageResponse
    {
        try await tsp.handling("SendCardMessage", context) { log in
            let token = try tsp.existingToken(request.digitalCardID)
            try tsp.requireIssuer(context.peer?.nodeID)(token)
            // A deleted token is in no wallet any more: the message would reach a card its holder removed.
            guard token.state != .deactivated else {
                throw TSPError(
                    .failedPrecondition,
                    "token \"\(token.digitalCardID)\" is deleted: it is in no wallet, so no message goes about it")
            }
            guard !request.title.isEmpty, !request.body.isEmpty else {
                throw TSPError(.invalidArgument, "title and body are required")
            }
            try Self.requireFits(request)
            // Free text for the cardholder's screens, kept by the broker: a card number in it is masked, as in a log;
            // in the action too, which the wallet shows with the message and which is as free as the rest.
            let body = TspV1.MessagingBody(
                title: maskPAN(request.title), body: maskPAN(request.body), action: maskPAN(request.action))
            let id = try await tsp.publish(
                D1.notification(.messaging, from: .cps, cardID: token.digitalCardID, body: .messaging(body)),
                about: token, to: [.wallet, .issuerApp], log: log)
            guard let id else {
                throw TSPError(.failedPrecondition, "the message could not be queued for the card's parties")
            }
            return TspV1.SendCardMessageResponse(messageID: id)
        }
    }

    /// A message's limits, in characters as people count them and in bytes of UTF-8 (4 per character, the most one
    /// Unicode scalar takes), since one character can take any number of bytes (a letter with combining marks)
    /// and the message must fit what the broker takes (`NotificationBroker.maximumMessageBytes`) with room to spare.
    static let messageLimits: [(field: String, characters: Int?, bytes: Int)] = [
        ("title", 100, 400), ("body", 2000, 8000), ("action", nil, 256),
    ]

    /// Refuses a message whose title, body or action exceeds its limits, naming the field and the limit.
    static func requireFits(_ request: TspV1.SendCardMessageRequest) throws {
        let values = ["title": request.title, "body": request.body, "action": request.action]
        for (field, characters, bytes) in messageLimits {
            let value = values[field] ?? ""
            if let characters, value.count > characters {
                throw TSPError(
                    .invalidArgument, "\(field) is \(value.count) characters; at most \(characters) are allowed")
            }
            guard value.utf8.count <= bytes else {
                throw TSPError(
                    .invalidArgument,
                    "\(field) is \(value.utf8.count) bytes of UTF-8; at most \(bytes) are allowed"
                        + (characters.map { " (\($0) characters of up to 4 bytes)" } ?? ""))
            }
        }
    }
}
