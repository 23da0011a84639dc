import Foundation
import Synchronization
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// What the person using the wallet does: add a card (to the active wallet account), accept its T&C (which
/// digitizes it in the account it was added to), list the cards.
public struct WalletControlService: WalletV1.WalletControl.ServiceProtocol {
    let tsp: TSPCalls
    let store: WalletStore
    let configuration: WalletConfiguration
    /// The person's choices: AddCard checks a card for the active account.
    let selection: WalletSelection
    let logger: Logger
    let clock: @Sendable () -> UInt64
    let newID: @Sendable () -> String
    let events: WalletEventHub
    /// Told of each card stored without an issuer, so the issuer resolver asks the TSP about it later.
    let issuerless: IssuerlessCardSignal?
    /// The check of the cards with the TSP that SyncWithTsp runs (`WalletTokenStateSync.check`); set by the router.
    var tokenSync: WalletTokenStateSync?
    /// The cards whose Digitize an accept-terms of this process is sending now: the resume leaves them to it. The
    /// resume that a new notification stream starts took such a card for an unanswered one, sent its Digitize a
    /// second time and recorded the answer first, so the token's activation was logged without the command's trace
    /// id, and the command's own answer was the second one.
    let digitizing = CardsInFlight()

    public init(
        tsp: any RPCCaller, store: WalletStore, configuration: WalletConfiguration, selection: WalletSelection,
        logger: Logger, clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs,
        newID: @escaping @Sendable () -> String = IdentifierRules.newID,
        events: WalletEventHub = WalletEventHub(), issuerless: IssuerlessCardSignal? = nil
    ) {
        self.events = events
        self.issuerless = issuerless
        self.tsp = TSPCalls(tsp)
        self.store = store
        self.configuration = configuration
        self.selection = selection
        self.logger = logger
        self.clock = clock
        self.newID = newID
    }

    /// `body`, a call to the TSP made before the card is stored, with what its failure to answer means: the card
    /// is not in the wallet. accept-terms says what to do in its place; add-card's "cannot connect to the tsp-node
    /// …" said nothing of the card. Adding typed card data again is safe; a push receipt or session whose answer
    /// was lost may have been used up by the TSP (it spends one with its eligible answer), and then only a new push
    /// adds the card.
    static func nothingAdded<T>(_ source: WalletCardSource, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError where error.code == .unavailable || error.code == .deadlineExceeded {
            var advice = "nothing was added to the wallet: add the card again once the TSP answers"
            if source != .manual && !neverSent(error) {
                let pushed = source == .pushSession ? "push session" : "push receipt"
                advice +=
                    "; the TSP may have used up the \(pushed) meanwhile: if it is refused as used, have the issuer "
                    + "push the card again"
            }
            throw RPCError(error.code, "\(error.message); \(advice)", cause: error)
        }
    }

    public func addCard(_ request: WalletV1.AddCardRequest, context: ServerContext) async throws
        -> WalletV1.AddCardResponse
    {
        // Run to its end when the caller goes, as accept-terms is: the TSP spends a push receipt or session with its
        // eligible answer, and cancelled with the call, the wallet never stored the card that answer was for.
        let adding = Task { try await addingCard(request, context: context) }
        return try await adding.value
    }

    private func addingCard(_ request: WalletV1.AddCardRequest, context: ServerContext) async throws
        -> WalletV1.AddCardResponse
    {
        try await answering {
            let log = logger.withTraceID(context.traceID)
            if let problem = ManualCardForm.languageProblem(request.language) {
                throw WalletError(.invalidArgument, problem)
            }
            // Read once: the card goes to the account that was active when the person added it, and its
            // eligibility receipt is bound to that account, even if another becomes active meanwhile.
            let account = selection.activeWalletAccountID
            var check = TspV1.CheckEligibilityRequest(
                requestID: newID(),
                eligibilityData: TspV1.EligibilityData(
                    language: request.language.isEmpty ? "en" : request.language, inputMethod: .bankApp),
                walletAccountID: account,
                device: configuration.device)
            let source: WalletCardSource
            var typedLast4 = ""
            switch request.source {
            case .manual(let manual)?:
                let card = try ManualCardInput.cardData(manual)
                typedLast4 = String(card.accountNumber.suffix(4))
                check.eligibilityData?.inputMethod = manual.inputMethod == .unspecified ? .manual : manual.inputMethod
                check.instrument = .encryptedCardData(
                    try await Self.nothingAdded(.manual) { try await tsp.encrypt(card) })
                source = .manual
            case .pushReceipt(let receipt)?:
                guard !receipt.payload.isEmpty else {
                    throw WalletError(.invalidArgument, "the push receipt is empty; pass the payload the issuer gave")
                }
                guard receipt.scheme != .unspecified else {
                    throw WalletError(.invalidArgument, "a push receipt needs its scheme (receipts are Mastercard's)")
                }
                check.instrument = .issuerPushReceipt(
                    TspV1.IssuerPushReceipt(scheme: receipt.scheme, payload: receipt.payload))
                source = .pushReceipt
            case .pushSessionID(let sessionID)?:
                guard !sessionID.isEmpty else {
                    throw WalletError(.invalidArgument, "the push session id is empty")
                }
                check.instrument = .pushSessionID(sessionID)
                source = .pushSession
            case nil:
                throw WalletError(
                    .invalidArgument, "AddCard needs a card: manual card data, an issuer push receipt or a push session"
                )
            }

            let answer: TspV1.CheckEligibilityResponse
            do {
                answer = try await Self.nothingAdded(source) { try await tsp.checkEligibility(check) }
            } catch let error as RPCError
                where error.code == .permissionDenied && source != .manual
                && error.message.contains("another wallet account")
            {
                // A receipt or session pushed to another account. The TSP cannot tell whether that account exists,
                // nor switch accounts; the person may have it in this wallet, and this is how they switch.
                throw RPCError(
                    .permissionDenied,
                    "\(error.message); to add it from another of this wallet's accounts, make that account active "
                        + "(tokenet wallet use-account) and add the card again", cause: error)
            }
            let last4 = answer.panLast4.isEmpty ? typedLast4 : answer.panLast4
            guard answer.eligible else {
                let reason =
                    answer.reasonMessage.isEmpty
                    ? (answer.reason.protoValueName ?? "the TSP found the card not eligible") : answer.reasonMessage
                log.info(
                    "card not eligible", ["source": source.rawValue, "reason": reason, "wallet_account": account])
                return WalletV1.AddCardResponse(
                    eligible: false, reason: reason, scheme: answer.scheme, panLast4: last4, walletAccountID: account)
            }
            guard !answer.eligibilityReceipt.isEmpty else {
                throw WalletError(.unavailable, "the TSP found the card eligible but sent no eligibility receipt")
            }
            let terms: CardV1.TermsAndConditions? =
                if case .termsAndConditions(let terms)? = answer.terms { terms } else { nil }
            let card = try store.addPending(
                source: source, scheme: answer.scheme, panLast4: last4, receipt: answer.eligibilityReceipt,
                receiptExpiresAtMs: answer.receiptExpiresAtMs, terms: terms, walletAccountID: account, nowMs: clock())
            log.info(
                "card eligible, awaiting T&C",
                [
                    "card_ref": card.cardRef, "source": source.rawValue, "scheme": "\(answer.scheme)",
                    "wallet_account": account,
                ])
            return WalletV1.AddCardResponse(
                cardRef: card.cardRef, eligible: true, terms: terms, scheme: answer.scheme, panLast4: last4,
                walletAccountID: account, receiptExpiresAtMs: answer.receiptExpiresAtMs)
        }
    }

    public func acceptTerms(_ request: WalletV1.AcceptTermsRequest, context: ServerContext) async throws
        -> WalletV1.AcceptTermsResponse
    {
        // The digitization runs to its end when its caller goes (a killed CLI, a closed app): cancelled with the
        // call, it cancelled the Digitize the TSP may already have decided, and the card stayed DIGITIZING here
        // while the TSP and the issuer held its token, until someone synced. Its own deadline, the call's (passed on
        // through the task's `ServerContext`), still bounds it.
        let logger = logger.withTraceID(context.traceID)
        let digitization = Task { try await answering { try await acceptTerms(cardRef: request.cardRef, log: logger) } }
        return try await digitization.value
    }

    /// Accepts the T&C of `cardRef` and digitizes it, or sends its Digitize again with the same request id when an
    /// earlier attempt's answer was lost (the person running accept-terms again, or the wallet resuming the
    /// digitizations it never got an answer to, `WalletTokenStateSync`).
    func acceptTerms(cardRef: String, log: Logger) async throws -> WalletV1.AcceptTermsResponse {
        let card = try store.card(ref: cardRef)
        switch AcceptTermsPlan.plan(for: card, nowMs: clock(), newRequestID: newID) {
        case .answer(let result):
            return Self.response(card, result)
        case .receiptExpired:
            throw WalletError(
                .failedPrecondition,
                "the eligibility of \(card.cardRef) expired before its T&C were accepted; \(card.addAgain)")
        case .digitize(let requestID, let acceptedAt, let fresh):
            let claimed = digitizing.claim(card.id)
            defer { if claimed { digitizing.release(card.id) } }
            // The key is committed before the call: if the call or this node fails, a retry sends the same key
            // and the TSP answers with the token it already made instead of making a second one.
            let attempt =
                fresh
                ? try store.beginDigitization(
                    id: card.id, requestID: requestID, termsAcceptedAtMs: acceptedAt, nowMs: clock()) : card
            // The account the card was added to, which its eligibility receipt is bound to, not the one active now.
            let account = card.account(configured: configuration.walletAccountID)
            let digitize = TspV1.DigitizeRequest(
                requestID: attempt.digitizeRequestID ?? requestID,
                eligibilityReceipt: attempt.eligibilityReceipt,
                acceptedTermsID: attempt.terms?.id ?? "",
                termsAcceptedAtMs: attempt.termsAcceptedAtMs ?? acceptedAt,
                device: configuration.device,
                walletAccountID: account,
                risk: configuration.risk,
                tokenRequestorID: configuration.provider.tokenRequestorID(for: card.scheme),
                tokenType: configuration.provider.tokenType)
            let result: TspV1.DigitizeResponse
            do {
                result = try await tsp.digitize(digitize)
            } catch let error as RPCError where error.code == .unavailable || error.code == .deadlineExceeded {
                // The answer was lost, not refused: the TSP may have made the token. The request is kept, so
                // the same command finishes it; the raw connection error alone left the card DIGITIZING with
                // nothing to say what to do. A call that never left began nothing.
                let begun =
                    Self.neverSent(error)
                    ? "the TSP was not reached: run accept-terms \(card.cardRef) again once it is"
                    : "the TSP may have begun the digitization: run accept-terms \(card.cardRef) again to finish it "
                        + "(it sends the same request, so no second token is made)"
                throw RPCError(error.code, "\(error.message); \(begun)", cause: error)
            } catch let error as RPCError where Self.refusedForGood(error) {
                // The TSP answers a request id it knows with its token; refusing it means it made none (the receipt
                // expired, or was never good for this card). Sending the same request again meets the same refusal,
                // so the card is recorded declined: it no longer waits as DIGITIZING, and it can be deleted.
                var declined = TspV1.DigitizeResponse()
                declined.decision = .declined
                declined.tokenState = .deactivated
                declined.scheme = card.scheme
                declined.panLast4 = card.panLast4
                declined.decidedBy = "tsp"
                declined.declineReason = "the TSP refused the digitization (\(error.message)); \(card.addAgain)"
                let (stored, recorded) = try store.finishDigitizationOnce(
                    id: card.id, result: declined, nowMs: clock())
                // Another caller recorded the card's answer meanwhile (the resume and accept-terms at once): that
                // answer stands, and this refusal, of a request the TSP had already answered, is moot.
                if !recorded, let answer = stored.result { return Self.response(stored, answer) }
                log.info(
                    "digitization refused by the TSP; card recorded as declined",
                    ["card_ref": card.cardRef, "status": error.code.protoValueName ?? "?"])
                // A pushed card cannot be added again from what pushed it: the eligibility check spent it.
                throw RPCError(
                    error.code, "\(error.message); \(card.cardRef) is recorded as declined: \(card.addAgain)",
                    cause: error)
            }
            if result.decision != .declined {
                // Kept as it came, the card showed state "?"; unrecorded, the request stays, and the same command
                // (or the resume after the next subscription) asks again.
                do {
                    try WalletTokenUpdates.requireKnown(result.tokenState, of: card)
                } catch {
                    throw RPCError(
                        .internal,
                        "the TSP's answer to the digitization is not usable: \(error.message); run accept-terms "
                            + "\(card.cardRef) again to ask for it again")
                }
            }
            let (stored, recorded) = try store.finishDigitizationOnce(id: card.id, result: result, nowMs: clock())
            // The other of two callers finishing the card at once answers with the card as recorded, and
            // announces nothing: the issuer app heard "card added" twice.
            guard recorded else { return Self.response(stored, stored.result ?? result) }
            log.info(
                "digitization finished",
                [
                    "card_ref": stored.cardRef, "decision": result.decision.protoValueName ?? "?",
                    "digital_card_id": result.digitalCardID,
                    "token_state": result.tokenState.protoValueName ?? "?", "decided_by": result.decidedBy,
                    "decline_reason": result.declineReason,
                ])
            // A token the TSP ended before its answer was recorded (a CARD_STATE that overtook it) was never
            // added for the issuer app.
            if let added = stored.result, added.decision != .declined, !added.digitalCardID.isEmpty,
                added.tokenState != .deactivated
            {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .tokenizedCardAdded, walletAccountID: account,
                        digitalCardID: added.digitalCardID, tokenState: added.tokenState, atMs: clock()),
                    cardIssuerNodeID: stored.issuerNodeID)
            }
            if stored.awaitsIssuer { issuerless?.cardStored() }
            return Self.response(stored, stored.result ?? result)
        }
    }

    /// Sends again the Digitize of every card whose answer the wallet never recorded (it stopped, or the answer was
    /// lost, and nobody ran accept-terms again): the TSP answers a request id it knows with the token it made, so
    /// the card gets its token instead of showing DIGITIZING for good. Returns how many cards got their answer.
    @discardableResult
    func resumeUnansweredDigitizations() async -> Int {
        let cards: [WalletCardRecord]
        do {
            cards = try store.unansweredDigitizations()
        } catch {
            logger.warning("the cards waiting for their digitization could not be read", ["error": "\(error)"])
            return 0
        }
        var answered = 0
        for (index, card) in cards.enumerated() {
            guard !digitizing.contains(card.id) else {
                logger.debug("digitization in progress; not resumed", ["card_ref": card.cardRef])
                continue
            }
            do {
                let response = try await acceptTerms(cardRef: card.cardRef, log: logger)
                answered += 1
                logger.info(
                    "unanswered digitization resumed",
                    [
                        "card_ref": card.cardRef, "decision": response.decision.protoValueName ?? "?",
                        "digital_card_id": response.card?.digitalCardID ?? "",
                    ])
            } catch let error as RPCError where Self.refusedForGood(error) {
                // Answered: with a refusal, which recorded the card declined (`acceptTerms`).
                answered += 1
                logger.info(
                    "unanswered digitization resumed; the TSP refused it, card recorded as declined",
                    ["card_ref": card.cardRef, "status": error.code.protoValueName ?? "?"])
            } catch let error as RPCError where error.code == .unavailable || error.code == .deadlineExceeded {
                // The TSP did not answer: the cards after this one would each wait for it as long (a sync with six
                // such cards took 27 s to fail). They wait for the next resume, as this one does.
                logger.warning(
                    "unanswered digitizations not resumed: the TSP did not answer",
                    ["card_ref": card.cardRef, "left": String(cards.count - index - 1), "error": "\(error)"])
                break
            } catch {
                logger.warning(
                    "unanswered digitization not resumed",
                    ["card_ref": card.cardRef, "error": "\(error)"])
            }
        }
        return answered
    }

    /// Whether the TSP refused a Digitize for what it is, so that sending it again meets the same refusal: its
    /// answer to a request it cannot take (an expired, unknown or used receipt).
    static func refusedForGood(_ error: RPCError) -> Bool {
        // Not INVALID_ARGUMENT or PERMISSION_DENIED: those come from the wallet's own request (its terms, its
        // device), which fixing the wallet's configuration can cure, and accept-terms then sends again.
        [.failedPrecondition, .notFound, .outOfRange, .alreadyExists].contains(error.code)
    }

    /// Whether a call failed before it reached its server: its channel could not connect, or a goaway refused it
    /// unprocessed.
    static func neverSent(_ error: RPCError) -> Bool {
        var cause: (any Error)? = error.cause
        while let current = cause {
            if current is NotConnected || current is CallNotProcessed { return true }
            cause = (current as? RPCError)?.cause
        }
        return false
    }

    public func syncWithTsp(_ request: WalletV1.SyncWithTspRequest, context: ServerContext) async throws
        -> WalletV1.SyncWithTspResponse
    {
        try await answering {
            guard let tokenSync else {
                throw WalletError(.failedPrecondition, "this wallet cannot check its cards with the TSP")
            }
            let resumed = await resumeUnansweredDigitizations()
            let (checked, changed) = try await tokenSync.check()
            // Counted after the check: a sync whose Digitize met a lost connection answered OK with the card still
            // DIGITIZING, and said nothing of it.
            let unanswered = (try? store.unansweredDigitizations().count) ?? 0
            return WalletV1.SyncWithTspResponse(
                digitizationsResumed: UInt32(resumed), cardsChecked: UInt32(checked), cardsChanged: UInt32(changed),
                digitizationsUnanswered: UInt32(unanswered))
        }
    }

    public func listCards(_ request: WalletV1.ListWalletCardsRequest, context: ServerContext) async throws
        -> WalletV1.ListWalletCardsResponse
    {
        try await answering {
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "ListCards")
            let cards = try store.cardPage(afterRow: try page.afterRow(call: "ListCards"), limit: page.size + 1)
            let (listed, next) = page.split(cards) { PageRequest.key(row: $0.id) }
            let nowMs = clock()
            return WalletV1.ListWalletCardsResponse(
                cards: listed.map { card in
                    var shown = card.walletCard(configured: configuration.walletAccountID)
                    shown.status = card.shownStatus(at: nowMs)
                    return shown
                }, nextPageToken: next)
        }
    }

    /// The answer to an AcceptTerms, also when repeated. The ID&V methods are offered only while the token waits
    /// for them (INACTIVE): repeated once it was activated or deleted, every method offered would fail.
    static func response(_ card: WalletCardRecord, _ result: TspV1.DigitizeResponse) -> WalletV1.AcceptTermsResponse {
        WalletV1.AcceptTermsResponse(
            card: card.walletCard,
            idvMethods: [.active, .suspended, .deactivated].contains(result.tokenState) ? [] : result.idvMethods,
            declineReason: result.declineReason, decision: result.decision, decidedBy: result.decidedBy)
    }
}

/// Card ids whose digitization a caller of this process has under way (`WalletControlService.digitizing`).
final class CardsInFlight: Sendable {
    private let ids = Mutex<Set<Int64>>([])

    /// Records `id`; false when another caller has it already.
    func claim(_ id: Int64) -> Bool { ids.withLock { $0.insert(id).inserted } }

    func release(_ id: Int64) { _ = ids.withLock { $0.remove(id) } }

    func contains(_ id: Int64) -> Bool { ids.withLock { $0.contains(id) } }
}
