import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// Renewals that need more than one call to the TSP: a pending renewal repeated, abandoned or forced complete
/// (`RenewalResolution`), and the settling of a renewal whose call failed.
extension IssuerCardCareService {
    /// Abandons the pending renewal of card `cardID` if the TSP did not apply it, or forces it complete (`goal`), as
    /// `RenewalResolution` decides from what the TSP holds.
    func settlePendingRenewal(of cardID: String, _ goal: RenewalResolution.Goal, log: Logger) async throws
        -> IssuerV1.IssuerRenewCardResponse
    {
        guard let card = try store.card(id: cardID) else {
            throw RPCError(
                .notFound, "the issuer has no card \"\(cardID)\"; ListCards shows its cards (tokenet issuer cards)")
        }
        guard let renewal = card.pendingRenewal?.renewal else {
            throw RPCError(
                .failedPrecondition,
                "card \(card.id) has no pending renewal to \(goal == .abandon ? "abandon" : "force complete")")
        }
        let caller = try tspCaller()
        guard renewals.begin(card.id) else {
            throw RPCError(.aborted, "a renewal of card \(card.id) is under way; try again once it has finished")
        }
        defer { renewals.end(card.id) }
        let (tokens, deleted, unknown) = try store.tokens(ofCard: card.id)
        return try await resolve(
            goal, card, renewal, tokens: tokens, skipped: (deleted.count, unknown.count), caller: caller,
            encrypted: nil, log: log)
    }

    /// Drives a `RenewalResolution` of the pending renewal `renewal` of `card`: asks the TSP what its tokens hold,
    /// sends the renewal again when the resolution says so, and settles the reservation as it decides. `encrypted`
    /// is the renewed card for the TSP when the caller has it already; otherwise it is made for the question, whose
    /// failure (no key from the TSP) then counts as a TSP that could not be asked. `tokens` are the card's tokens
    /// not known gone, `skipped` how many were left out as known deleted and as unknown to the TSP; the tokens the
    /// TSP answers as deleted are recorded so and counted with them, and those it answers NOT_FOUND are recorded as
    /// unknown to it. A token the TSP refuses to say anything of (another issuer's) holds nothing, so it neither
    /// keeps a renewal from being abandoned or forced nor is taken to hold the renewal; the answer names it.
    func resolve(
        _ goal: RenewalResolution.Goal, _ card: StoredCard, _ renewal: PendingRenewal, tokens: [String],
        skipped: (deleted: Int, unknown: Int), caller: any RPCCaller, encrypted: CardV1.EncryptedCardData?,
        log: Logger
    ) async throws -> IssuerV1.IssuerRenewCardResponse {
        let deleted = skipped.deleted
        var encrypted = encrypted
        var resolution = RenewalResolution(goal)
        var action = resolution.handle(.started)
        var renewed: [String] = []
        /// The live tokens left without the renewal, and the tokens the TSP answered as deleted.
        var notRenewed: [String] = []
        var deletedAtTSP: [String] = []
        /// The tokens the TSP refused to answer about, each in its own answer (unknown to it, another issuer's).
        var refusedAtTSP: [String] = []
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
                            TspV1.GetFundingCardsRequest(digitalCardIds: batch, cardData: cardData),
                            options: .answeringInTime
                        ).fundingCards
                    }
                    let holding = TSPHolding(cards, renewal: renewal, currentPAN: card.pan)
                    renewed = cards.filter { $0.panMatches && $0.tokenState != .deactivated }.map(\.digitalCardID)
                    // Named as left behind: the live tokens on another card, and those the TSP does not know.
                    let lagging = Set(TSPHolding.notHolding(cards, renewal: renewal, currentPAN: card.pan))
                    notRenewed = cards.filter { $0.tokenState == .unspecified || lagging.contains($0.digitalCardID) }
                        .map(\.digitalCardID)
                    deletedAtTSP = cards.filter { $0.tokenState == .deactivated }.map(\.digitalCardID)
                    noteDeleted(deletedAtTSP, log: log)
                    refusedAtTSP = cards.filter { $0.statusCode != 0 }.map(\.digitalCardID)
                    noteUnknown(
                        cards.filter { $0.statusCode == StatusCode.notFound.rawValue }.map(\.digitalCardID), log: log)
                    noteKnown(cards.filter { $0.statusCode == 0 }.map(\.digitalCardID), log: log)
                    log.info(
                        "asked the TSP about a pending renewal",
                        [
                            "card": card.id, "last4": renewal.pan.last4, "tsp": "\(holding)",
                            "refused": refusedAtTSP.joined(separator: ","),
                        ])
                    action = resolution.handle(.tspHolds(holding))
                } catch {
                    failure = error
                    action = resolution.handle(.askFailed)
                }
            case .sendRenewal:
                // Only a repeat sends, and it comes with the renewed card encrypted before the reservation was read.
                guard let encrypted else { throw RPCError(.internal, "the renewed card was not encrypted") }
                let answer = await send(
                    card, encrypted, tokens: tokens.filter { !refusedAtTSP.contains($0) }, caller: caller, log: log)
                sent = answer
                deletedAtTSP = Array(Set(deletedAtTSP).union(answer.deleted))
                if let error = answer.failure {
                    failure = error
                    action = resolution.handle(.renewalFailed(answer.settlement))
                } else {
                    renewed = answer.renewed
                    notRenewed = refusedAtTSP + answer.refused
                    action = resolution.handle(.renewalAnswered)
                }
            case .complete:
                try await IssuerError.mapping { () throws(IssuerError) in
                    try store.settleRenewal(id: card.id, renewal, .complete)
                }
                let fields: KeyValuePairs<String, String> = [
                    "card": card.id, "last4": renewal.pan.last4, "tokens": "\(renewed.count)",
                    "not_renewed": "\(notRenewed.count)", "deleted": "\(deleted + deletedAtTSP.count)",
                    "unknown": "\(skipped.unknown)",
                ]
                switch goal {
                case .abandon: log.info("renewal completed, not abandoned: the TSP applied it", fields)
                case .forceComplete where !notRenewed.isEmpty:
                    log.warning("renewal forced complete: some tokens do not hold the renewed card", fields)
                case .complete, .forceComplete: log.info("card renewed", fields)
                }
                return IssuerV1.IssuerRenewCardResponse(
                    cardID: card.id, maskedPAN: renewal.pan.masked, expiry: renewal.expiry.description,
                    renewedDigitalCardIds: renewed, notRenewedDigitalCardIds: notRenewed,
                    deletedTokensSkipped: Int32(deleted + deletedAtTSP.count),
                    unknownTokensSkipped: Int32(skipped.unknown))
            case .release where goal == .abandon:
                try await IssuerError.mapping { () throws(IssuerError) in
                    try store.settleRenewal(id: card.id, renewal, .release)
                }
                log.info(
                    "renewal abandoned",
                    ["card": card.id, "last4": renewal.pan.last4, "refused": refusedAtTSP.joined(separator: ",")])
                return IssuerV1.IssuerRenewCardResponse(
                    cardID: card.id, maskedPAN: card.pan.masked, expiry: card.expiry.description, abandoned: true,
                    notRenewedDigitalCardIds: refusedAtTSP)
            case .release, .keepPending(.answerLost), .keepPending(.heldInPart):
                throw try await settleFailedRenewal(
                    card.id, renewal, action == .release ? .release : .keepPending,
                    after: failure ?? RPCError(.unknown, "no answer"), sent: sent, log: log)
            case .keepPending(.tspNotAsked):
                let status = (failure as? RPCError)?.code ?? .unavailable
                let reason = Self.failureReason(failure ?? RPCError(.unknown, "no answer"))
                let what = goal == .forceComplete ? "forced complete" : goal == .abandon ? "abandoned" : "completed"
                log.warning(
                    "renewal not \(what): the TSP could not be asked", ["card": card.id, "last4": renewal.pan.last4])
                throw RPCError(
                    status,
                    goal == .forceComplete
                        ? "the TSP could not be asked which of card \(card.id)'s tokens hold its renewal (\(reason)), "
                            + "so the renewal to the number ending \(renewal.pan.last4), \(renewal.expiry) is not "
                            + "forced complete and stays pending: force or repeat it once the TSP answers"
                        : "the TSP could not be asked whether it applied the renewal of card \(card.id) (\(reason)); "
                            + "the renewal to the number ending \(renewal.pan.last4), \(renewal.expiry) stays pending: "
                            + "abandon or repeat it once the TSP answers")
            case .keepPending(.tspUnclear):
                log.warning(
                    "renewal not abandoned: the TSP holds it for some tokens only",
                    ["card": card.id, "last4": renewal.pan.last4])
                throw RPCError(
                    .failedPrecondition,
                    "the TSP holds the renewed card for some of card \(card.id)'s tokens only, or cannot tell; "
                        + "abandoning the renewal to the number ending \(renewal.pan.last4), \(renewal.expiry) could "
                        + "leave the two sides differing: repeat it to complete it (or force it complete: "
                        + "tokenet issuer renew-card --force-complete, force_complete in RenewCard)")
            case .ignore:
                throw RPCError(.internal, "the renewal of card \(card.id) could not be settled")
            }
        }
    }

    /// Why a call to the TSP failed, for the operator's answer. The calls the answer depends on (the question about
    /// a pending renewal, the renewal itself) end a little before the served call's own deadline
    /// (`CallOptions.answeringInTime`), so that a TSP that does not answer (a partitioned link) is told as such,
    /// "the TSP could not be asked … stays pending", rather than as the operator's bare DEADLINE_EXCEEDED. A call
    /// cut short so says the TSP did not answer within the operator's deadline: its own message named the shortened
    /// deadline ("within its deadline (2383 ms)"), which the operator never gave.
    static func failureReason(_ error: any Error) -> String {
        guard let error = error as? RPCError else { return String(describing: error) }
        if error.code == .deadlineExceeded, ServerContext.current?.deadline != nil {
            return "the TSP did not answer within this call's deadline"
        }
        return error.message
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
    /// The tokens the TSP answers as deleted are recorded so; the ones it refuses for good are logged (by id only).
    func send(
        _ card: StoredCard, _ encrypted: CardV1.EncryptedCardData, tokens: [String], caller: any RPCCaller, log: Logger
    ) async -> RenewalSent {
        let batches = LifecycleLimits.batches(tokens)
        var sent = RenewalSent(batches: batches.count)
        for batch in batches {
            do {
                sent.answered(
                    try await TspV1.IssuerCardUpdates.Client(caller).renewCard(
                        TspV1.RenewCardRequest(
                            digitalCardIds: batch, cardData: encrypted, previousCardID: card.id, newCardID: card.id),
                        options: .answeringInTime))
            } catch {
                sent.failure = error
                break
            }
            if sent.failure != nil { break }
        }
        noteDeleted(sent.deleted, log: log)
        noteUnknown(sent.unknown, log: log)
        noteKnown(sent.renewed + sent.deleted, log: log)
        if !sent.refused.isEmpty {
            log.warning(
                "the TSP refused tokens of a renewal for good",
                ["card": card.id, "tokens": sent.refused.joined(separator: ",")])
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
        let reason = Self.failureReason(error)
        let last4 = renewal.pan.last4
        let statusName = status.protoValueName ?? "\(status.rawValue)"
        if settlement == .release, (error as? RPCError)?.callWasNeverSent == true {
            log.info("renewal not sent: the TSP cannot be reached", ["card": cardID, "last4": last4])
            return RPCError(
                status,
                "the renewal of card \(cardID) was not sent, so the card keeps its number and expiry: \(reason); "
                    + "renew it again once the TSP can be reached")
        }
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
                "the TSP renewed \(sent.renewed.count) of card \(cardID)'s tokens, answering \(sent.answered) of "
                    + "\(sent.batches) calls, then failed (\(reason)); it holds the number ending \(last4), "
                    + "\(renewal.expiry) for some tokens only, so the renewal stays pending: repeat it to complete it")
        }
        if (error as? RPCError)?.callWasNeverSent == true {
            // Repeated after the TSP said it holds the renewal for some tokens, and then not sent: still pending.
            log.warning(
                "renewal pending: not sent again, the TSP cannot be reached", ["card": cardID, "last4": last4])
            return RPCError(
                status,
                "the renewal of card \(cardID) was not sent again (\(reason)); the TSP holds the number ending "
                    + "\(last4), \(renewal.expiry) for some of its tokens, so the renewal stays pending: repeat it once "
                    + "the TSP can be reached")
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

extension IssuerCardCareService {
    /// Moves a token the TSP's stand-in made from `card`'s number or expiry before a renewal onto the card as it is
    /// now (a RenewCard of that token alone), so that it pays with the card the issuer keeps. Throws when the TSP
    /// cannot be asked now (the advice is then delivered again, and this is tried again); a refusal that asking
    /// again would not change is logged, and the token is recorded all the same.
    func moveStandInToken(_ token: String, onto card: StoredCard, log: Logger) async throws {
        let encrypted = try await encryptedForTSP(card, PendingRenewal(pan: card.pan, expiry: card.expiry))
        let sent = await send(card, encrypted, tokens: [token], caller: try tspCaller(), log: log)
        if let failure = sent.failure {
            let code = (failure as? RPCError)?.code ?? .unavailable
            if Self.passingFailures.contains(code) { throw failure }
            log.warning(
                "the TSP refused to move a stand-in token onto its renewed card; it keeps the card's previous number",
                ["digital_card_id": token, "card": card.id, "error": String(describing: failure)])
        } else if sent.renewed == [token] {
            log.info(
                "a stand-in token made from the card's previous number or expiry now holds the card as it is",
                ["digital_card_id": token, "card": card.id, "last4": card.pan.last4, "expiry": "\(card.expiry)"])
        }
    }

    /// The TSP's failures that may pass (it is away, busy, or failed): a stand-in token's move or deletion is asked
    /// again with the advice's next delivery. Any other is a refusal, logged, which asking again would meet again.
    static let passingFailures: [StatusCode] = [
        .unavailable, .deadlineExceeded, .resourceExhausted, .aborted, .internal, .unknown,
    ]

    private func refusedDeletion(
        _ token: String, _ refusal: IssuerDecisionsService.StandInRefusal, _ why: String, log: Logger
    ) {
        log.warning(
            "the TSP refused to delete a stand-in token the issuer would not have approved",
            ["digital_card_id": token, "reason": refusal.reasonCode, "why": refusal.why, "error": why])
    }

    /// The reason code a stand-in token made from card details the issuer does not have (a number, an expiry or a
    /// security code) is deleted with.
    static let detailsMismatchReason = "CARD_DETAILS_MISMATCH"
    /// The reason code a stand-in token of a card the issuer declines (not eligible, or its rule declines) is
    /// deleted with.
    static let issuerDeclinedReason = "ISSUER_DECLINED"

    /// Deletes at the TSP a token its stand-in approved that the issuer would not have (`refusal` says why).
    /// Throws when the TSP cannot be asked now, so that the advice comes again; a refusal (the token deleted
    /// meanwhile) is logged.
    func deleteStandInToken(
        _ token: String, because refusal: IssuerDecisionsService.StandInRefusal, log: Logger
    ) async throws {
        let client = TspV1.TokenLifecycle.Client(try tspCaller())
        let answer: TspV1.ChangeIssuerTokenStatesResponse
        do {
            answer = try await client.changeIssuerTokenStates(
                TspV1.ChangeIssuerTokenStatesRequest(
                    digitalCardIds: [token], action: .delete, reasonCode: refusal.reasonCode))
        } catch let error as RPCError where !Self.passingFailures.contains(error.code) {
            refusedDeletion(token, refusal, error.description, log: log)
            return
        }
        if let result = answer.results.first(where: { $0.digitalCardID == token }), result.statusCode != 0 {
            refusedDeletion(token, refusal, "status \(result.statusCode): \(result.message)", log: log)
            return
        }
        noteDeleted([token], log: log)
        log.warning(
            "a stand-in token the issuer would not have approved was deleted",
            ["digital_card_id": token, "reason": refusal.reasonCode, "why": refusal.why])
    }
}
