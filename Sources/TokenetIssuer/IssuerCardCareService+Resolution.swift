import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// Renewals that need more than one call to the TSP: a pending renewal repeated or abandoned (`RenewalResolution`),
/// and the settling of a renewal whose call failed.
extension IssuerCardCareService {
    /// Abandons the pending renewal of card `cardID` if the TSP did not apply it (`RenewalResolution`): the reserved
    /// number is free again and the card keeps its own.
    func abandonRenewal(of cardID: String, log: Logger) async throws -> IssuerV1.IssuerRenewCardResponse {
        guard let card = try store.card(id: cardID) else {
            throw RPCError(.notFound, "the issuer has no card \"\(cardID)\"; ListCards shows its cards")
        }
        guard let renewal = card.pendingRenewal?.renewal else {
            throw RPCError(.failedPrecondition, "card \(card.id) has no pending renewal to abandon")
        }
        let caller = try tspCaller()
        guard renewals.begin(card.id) else {
            throw RPCError(.aborted, "a renewal of card \(card.id) is under way; try again once it has finished")
        }
        defer { renewals.end(card.id) }
        let tokens = try store.digitalCardIDs(ofCard: card.id)
        return try await resolve(.abandon, card, renewal, tokens: tokens, caller: caller, encrypted: nil, log: log)
    }

    /// Drives a `RenewalResolution` of the pending renewal `renewal` of `card`: asks the TSP what its tokens hold,
    /// sends the renewal again when the resolution says so, and settles the reservation as it decides. `encrypted`
    /// is the renewed card for the TSP when the caller has it already; otherwise it is made for the question, whose
    /// failure (no key from the TSP) then counts as a TSP that could not be asked.
    func resolve(
        _ goal: RenewalResolution.Goal, _ card: StoredCard, _ renewal: PendingRenewal, tokens: [String],
        caller: any RPCCaller, encrypted: CardV1.EncryptedCardData?, log: Logger
    ) async throws -> IssuerV1.IssuerRenewCardResponse {
        var encrypted = encrypted
        var resolution = RenewalResolution(goal)
        var action = resolution.handle(.started)
        var renewed: [String] = []
        var failure: (any Error)?
        var sent: RenewalSent?
        while true {
            switch action {
            case .askTSP:
                guard !tokens.isEmpty else {
                    action = resolution.handle(.tspHolds(.noToken))
                    continue
                }
                do {
                    let cardData: CardV1.EncryptedCardData
                    if let encrypted {
                        cardData = encrypted
                    } else {
                        cardData = try await encryptedForTSP(card, renewal)
                    }
                    encrypted = cardData
                    // Every token is asked about, a batch a call, and the answers are read together: a renewal that
                    // failed after its first batch is held by the TSP for some tokens only.
                    var cards: [TspV1.FundingCard] = []
                    for batch in LifecycleLimits.batches(tokens) {
                        cards += try await TspV1.IssuerCardUpdates.Client(caller).getFundingCards(
                            TspV1.GetFundingCardsRequest(digitalCardIds: batch, cardData: cardData)
                        ).fundingCards
                    }
                    let holding = TSPHolding(cards, renewal: renewal, currentPAN: card.pan)
                    renewed = cards.filter { $0.panMatches && $0.tokenState != .deactivated }.map(\.digitalCardID)
                    log.info(
                        "asked the TSP about a pending renewal",
                        ["card": card.id, "last4": renewal.pan.last4, "tsp": "\(holding)"])
                    action = resolution.handle(.tspHolds(holding))
                } catch {
                    failure = error
                    action = resolution.handle(.askFailed)
                }
            case .sendRenewal:
                // Only a repeat sends, and it comes with the renewed card encrypted before the reservation was read.
                guard let encrypted else { throw RPCError(.internal, "the renewed card was not encrypted") }
                let answer = await send(card, encrypted, tokens: tokens, caller: caller)
                sent = answer
                if let error = answer.failure {
                    failure = error
                    action = resolution.handle(.renewalFailed(answer.settlement))
                } else {
                    renewed = answer.renewed
                    action = resolution.handle(.renewalAnswered)
                }
            case .complete:
                try await IssuerError.mapping { () throws(IssuerError) in
                    try store.settleRenewal(id: card.id, renewal, .complete)
                }
                let what = goal == .abandon ? "renewal completed, not abandoned: the TSP applied it" : "card renewed"
                log.info(what, ["card": card.id, "last4": renewal.pan.last4, "tokens": "\(renewed.count)"])
                return IssuerV1.IssuerRenewCardResponse(
                    cardID: card.id, maskedPAN: renewal.pan.masked, expiry: renewal.expiry.description,
                    renewedDigitalCardIds: renewed)
            case .release where goal == .abandon:
                try await IssuerError.mapping { () throws(IssuerError) in
                    try store.settleRenewal(id: card.id, renewal, .release)
                }
                log.info("renewal abandoned", ["card": card.id, "last4": renewal.pan.last4])
                return IssuerV1.IssuerRenewCardResponse(
                    cardID: card.id, maskedPAN: card.pan.masked, expiry: card.expiry.description, abandoned: true)
            case .release, .keepPending(.answerLost), .keepPending(.heldInPart):
                throw try await settleFailedRenewal(
                    card.id, renewal, action == .release ? .release : .keepPending,
                    after: failure ?? RPCError(.unknown, "no answer"), sent: sent, log: log)
            case .keepPending(.tspNotAsked):
                let status = (failure as? RPCError)?.code ?? .unavailable
                let reason = (failure as? RPCError)?.message ?? String(describing: failure)
                log.warning(
                    "renewal not abandoned: the TSP could not be asked", ["card": card.id, "last4": renewal.pan.last4])
                throw RPCError(
                    status,
                    "the TSP could not be asked whether it applied the renewal of card \(card.id) (\(reason)); the "
                        + "renewal to the number ending \(renewal.pan.last4), \(renewal.expiry) stays pending: abandon "
                        + "or repeat it once the TSP answers")
            case .keepPending(.tspUnclear):
                log.warning(
                    "renewal not abandoned: the TSP holds it for some tokens only",
                    ["card": card.id, "last4": renewal.pan.last4])
                throw RPCError(
                    .failedPrecondition,
                    "the TSP holds the renewed card for some of card \(card.id)'s tokens only, or cannot tell; "
                        + "abandoning the renewal to the number ending \(renewal.pan.last4), \(renewal.expiry) could "
                        + "leave the two sides differing: repeat it to complete it")
            case .ignore:
                throw RPCError(.internal, "the renewal of card \(card.id) could not be settled")
            }
        }
    }

    /// `renewal` of `card` (its code and name kept) encrypted to the TSP's key, as the TSP takes card data.
    func encryptedForTSP(_ card: StoredCard, _ renewal: PendingRenewal) async throws
        -> CardV1.EncryptedCardData
    {
        let key = try await tsp.keyForPushing()
        let data = CardData(pan: renewal.pan, expiry: renewal.expiry, cvv2: card.cvc, name: card.cardholderName)
        do {
            return CardV1.EncryptedCardData(
                jwe: try JWE.encrypt(data, to: key, kid: key.kid), publicKeyIdentifier: key.kid)
        } catch {
            throw RPCError(.internal, "cannot encrypt the renewed card to the TSP's key: \(error.message)")
        }
    }

    /// Sends the renewal to the TSP for every token of the card, a batch (`LifecycleLimits.issuerBatch`) a call in
    /// order, and stops at the first call that fails: the batches after it wait for the renewal to be repeated.
    func send(
        _ card: StoredCard, _ encrypted: CardV1.EncryptedCardData, tokens: [String], caller: any RPCCaller
    ) async -> RenewalSent {
        let batches = LifecycleLimits.batches(tokens)
        var sent = RenewalSent(batches: batches.count)
        for batch in batches {
            do {
                sent.renewed += try await TspV1.IssuerCardUpdates.Client(caller).renewCard(
                    TspV1.RenewCardRequest(
                        digitalCardIds: batch, cardData: encrypted, previousCardID: card.id, newCardID: card.id)
                ).renewedDigitalCardIds
                sent.answered += 1
            } catch {
                sent.failure = error
                break
            }
        }
        return sent
    }

    /// Settles a reserved renewal whose TSP call failed with `error` as `settlement` says and returns the error the
    /// operator gets: a refusal gives the number back and the card keeps its own; an unknown outcome, or a renewal
    /// the TSP holds for some tokens only (`sent` says how far it got), keeps the reservation, says so, and is
    /// logged as a warning, since until the renewal is repeated the TSP may hold a number the issuer's card does not.
    func settleFailedRenewal(
        _ cardID: String, _ renewal: PendingRenewal, _ settlement: RenewalSettlement, after error: any Error,
        sent: RenewalSent?, log: Logger
    ) async throws -> RPCError {
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
        if let sent, sent.answered > 0 {
            log.warning(
                "renewal pending: the TSP renewed some tokens only",
                [
                    "card": cardID, "last4": last4, "status": statusName, "calls": "\(sent.answered)/\(sent.batches)",
                    "tokens": "\(sent.renewed.count)",
                ])
            return RPCError(
                status,
                "the TSP renewed card \(cardID)'s tokens in \(sent.answered) of \(sent.batches) calls, then failed "
                    + "(\(reason)); it holds the number ending \(last4), \(renewal.expiry) for some tokens only, so the "
                    + "renewal stays pending: repeat it to complete it")
        }
        if settlement == .keepPending, RenewalSettlement(failure: error) == .release {
            // Refused, but the TSP said before it holds the renewal for some tokens (`RenewalResolution.heldInPart`).
            log.warning(
                "renewal pending: refused, but the TSP holds it for some tokens",
                ["card": cardID, "last4": last4, "status": statusName])
            return RPCError(
                status,
                "the TSP refused the renewal of card \(cardID) sent again (\(reason)) but holds it for some of its "
                    + "tokens; the renewal to the number ending \(last4), \(renewal.expiry) stays pending: repeat it "
                    + "to complete it")
        }
        log.warning(
            "renewal pending: the TSP's answer was lost", ["card": cardID, "last4": last4, "status": statusName])
        return RPCError(
            status,
            "the TSP's answer to the renewal of card \(cardID) was lost (\(reason)); the renewal to the number ending "
                + "\(last4), \(renewal.expiry) stays pending: repeat it to complete it")
    }
}
