import Foundation
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

/// `tokenet.wallet.v1.WalletLifecycle`: the person using the wallet suspends, resumes or deletes a digital card
/// (the TSP decides and notifies every party) or removes a card that never got a token, reads the transactions and
/// messages the TSP pushed, and pays with limited-use keys that are replenished before they run out.
public struct WalletLifecycleService: WalletV1.WalletLifecycle.ServiceProtocol {
    let tsp: TspV1.TokenLifecycle.Client
    let store: WalletStore
    let updates: WalletTokenUpdates
    let logger: Logger
    /// The most a payment that took its key waits for the card's next batch (`refillWait(before:)`).
    let refillWait: Duration

    init(
        tsp: any RPCCaller, store: WalletStore, updates: WalletTokenUpdates, logger: Logger,
        refillWait: Duration = .seconds(2)
    ) {
        self.tsp = TspV1.TokenLifecycle.Client(tsp)
        self.store = store
        self.updates = updates
        self.logger = logger
        self.refillWait = refillWait
    }

    public func changeCardState(_ request: WalletV1.WalletChangeCardStateRequest, context: ServerContext)
        async throws -> WalletV1.WalletChangeCardStateResponse
    {
        try await answering {
            if request.action == .delete, let removed = try removeIfTokenless(request, context: context) {
                return removed
            }
            let (card, digitalCardID) = try digitalCard(request.cardRef)
            if let refusal = Self.endedTokenRefusal(card, digitalCardID: digitalCardID, action: request.action) {
                throw refusal
            }
            let answer: TspV1.ChangeTokenStateResponse
            do {
                answer = try await tsp.changeTokenState(
                    TspV1.ChangeTokenStateRequest(
                        digitalCardID: digitalCardID, action: request.action, reasonCode: request.reasonCode),
                    options: .answeringInTime)
            } catch let error as RPCError {
                // Past its deadline the call may have reached the TSP's handler all the same: said, so that a
                // person checks before repeating it.
                let mayHaveHappened =
                    error.code == .deadlineExceeded
                    ? "; the TSP may have made the change all the same: the card's state shows it once the TSP's "
                        + "notification arrives (tokenet wallet cards)" : ""
                throw RPCError(
                    error.code, "the TSP's ChangeTokenState failed: \(error.message)\(mayHaveHappened)", cause: error)
            }
            let stored: WalletCardRecord
            do throws(WalletError) {
                stored = try updates.apply(answer.tokenState, version: answer.stateVersion, to: card)
            } catch {
                throw Self.notRecorded(error, state: answer.tokenState)
            }
            logger.withTraceID(context.traceID).info(
                "token state changed",
                [
                    "card_ref": card.cardRef, "action": request.action.protoValueName ?? "?",
                    "reason": request.reasonCode, "state": answer.tokenState.protoValueName ?? "?",
                ])
            return WalletV1.WalletChangeCardStateResponse(card: stored.walletCard)
        }
    }

    /// The TSP changed the token but the wallet could not record it (a full disk): said as that. "The wallet could
    /// not update the card's token state … then try again" sent the cardholder to repeat a delete the TSP had
    /// already done, and the repeat was refused. The TSP's CARD_STATE notification brings the change once the
    /// wallet can write again (the broker keeps it until the wallet has handled it).
    static func notRecorded(_ error: WalletError, state: CardV1.TokenState) -> RPCError {
        let status = error.rpcError
        let name = state.protoValueName.map { $0.replacingOccurrences(of: "TOKEN_STATE_", with: "") } ?? "changed"
        let why: String
        switch status.code {
        case .resourceExhausted: why = "its disk is full; free space on the disk that holds its data directory"
        case .unavailable:
            let storage = error.cause as? StorageError
            why =
                (storage?.isBusy == true
                    ? storage?.busyAdvice(of: "the wallet", thenTryAgain: false)
                    : storage?.unwritableStorageAdvice(of: "the wallet", thenTryAgain: false))
                ?? error.message
        default: why = error.message
        }
        // Not UNAVAILABLE, which callers read as safe to repeat: the TSP has made the change.
        return RPCError(
            status.code == .resourceExhausted ? .resourceExhausted : .internal,
            "the TSP changed the token (it is \(name) now), but the wallet could not record it: \(why). The wallet "
                + "takes the change from the TSP's notification once it can write again; do not repeat the command",
            cause: ServerFailure(error))
    }

    /// A suspend or resume of a card whose token the wallet knows has ended (DEACTIVATED, which is final): refused
    /// here, as delete handles such a card without the TSP. Asked, the TSP refused it all the same, and the answer
    /// ("the TSP's ChangeTokenState failed") read as a TSP problem rather than a card that is gone. Nil otherwise.
    static func endedTokenRefusal(
        _ card: WalletCardRecord, digitalCardID: String, action: TspV1.LifecycleAction
    ) -> WalletError? {
        guard action == .suspend || action == .resume, card.result?.tokenState == .deactivated else { return nil }
        let verb = action == .suspend ? "suspend" : "resume"
        return WalletError(
            .failedPrecondition,
            "cannot \(verb) \(card.cardRef): its token \(digitalCardID) had already ended (DEACTIVATED), so the TSP "
                + "was not asked; a deactivated token never changes state again (tokenet wallet delete removes the "
                + "card from the wallet)")
    }

    /// A delete of a card without a token, or whose token has ended, removes the card from the wallet, with no TSP
    /// call (`CardDeletePlan`); nil for a card with a live token, which the TSP deletes.
    private func removeIfTokenless(_ request: WalletV1.WalletChangeCardStateRequest, context: ServerContext)
        throws(WalletError) -> WalletV1.WalletChangeCardStateResponse?
    {
        let card = try store.card(ref: request.cardRef)
        switch CardDeletePlan.plan(for: card) {
        case .deleteToken:
            return nil
        case .removeEndedCard:
            try store.removeEndedCard(id: card.id)
            logger.withTraceID(context.traceID).info(
                "card whose token had ended removed from the wallet",
                [
                    "card_ref": card.cardRef, "digital_card_id": card.result?.digitalCardID ?? "",
                    "reason": request.reasonCode,
                ])
            return WalletV1.WalletChangeCardStateResponse(card: card.walletCard, removed: true)
        case .awaitDigitization:
            throw WalletError(
                .failedPrecondition,
                "\(card.cardRef) has no answer yet to its digitization, which may have made a token at the TSP: "
                    + "accept its T&C again (tokenet wallet accept-terms) to get the answer, then delete it")
        case .removeCard:
            // Its T&C accepted meanwhile: a Digitize may be on its way.
            guard try store.removeTokenlessCard(id: card.id) else {
                throw WalletError(
                    .failedPrecondition,
                    "\(card.cardRef) is being digitized; delete it once accept-terms has answered")
            }
            logger.withTraceID(context.traceID).info(
                "card without a token removed from the wallet; the TSP holds nothing of it",
                ["card_ref": card.cardRef, "status": card.status.rawValue, "reason": request.reasonCode])
            // As `cards` listed it: a card whose T&C expired said PENDING_TERMS here.
            var removed = card.walletCard
            removed.status = card.shownStatus(at: UInt64(max(0, Date().timeIntervalSince1970 * 1000)))
            return WalletV1.WalletChangeCardStateResponse(card: removed, removed: true)
        }
    }

    public func listTransactions(_ request: WalletV1.WalletTransactionsRequest, context: ServerContext)
        async throws -> WalletV1.WalletTransactionsResponse
    {
        try await answering {
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "ListTransactions")
            let id = request.cardRef.isEmpty ? nil : try digitalCard(request.cardRef).1
            let after = try page.afterTime(
                in: request.cardRef, call: "ListTransactions", field: "card_ref", items: "card")
            let rows = try store.transactionPage(
                digitalCardID: id, listing: request.cardRef, after: after, limit: page.size + 1)
            let (transactions, next) = page.split(rows, key: \.pageKey)
            return WalletV1.WalletTransactionsResponse(
                transactions: transactions.map(\.transaction), nextPageToken: next)
        }
    }

    public func inbox(_ request: WalletV1.WalletInboxRequest, context: ServerContext) async throws
        -> WalletV1.WalletInboxResponse
    {
        try await answering {
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "Inbox")
            let rows = try store.inboxPage(afterRow: try page.afterRow(call: "Inbox"), limit: page.size + 1)
            let (notifications, next) = page.split(rows) { PageRequest.key(row: $0.row) }
            return WalletV1.WalletInboxResponse(notifications: notifications.map(\.notification), nextPageToken: next)
        }
    }

    public func paymentKeys(_ request: WalletV1.PaymentKeysRequest, context: ServerContext) async throws
        -> WalletV1.PaymentKeysResponse
    {
        try await answering {
            let (card, id) = try digitalCard(request.cardRef)
            var keys = try store.paymentKeys(cardID: card.id)
            // A deleted token's keys went with it: none of them can ever pay again.
            if card.result?.tokenState == .deactivated { keys.remaining = 0 }
            return response(card, id, keys, replenished: false)
        }
    }

    /// One payment: the token must be ACTIVE; a card without keys gets its first batch, and a card left at or
    /// below the threshold asks for the next.
    public func usePaymentKey(_ request: WalletV1.PaymentKeysRequest, context: ServerContext) async throws
        -> WalletV1.PaymentKeysResponse
    {
        try await answering {
            let (card, id) = try digitalCard(request.cardRef)
            guard card.result?.tokenState == .active else {
                let state = (card.result?.tokenState.protoValueName ?? "?").replacingOccurrences(
                    of: "TOKEN_STATE_", with: "")
                // With the way to an ACTIVE card where there is one: an INACTIVE token waits for its step-up.
                let next =
                    switch state {
                    case "INACTIVE":
                        " (finish its step-up first: tokenet wallet select-method, then submit-otp or the issuer app)"
                    case "SUSPENDED":
                        " (resume it with tokenet wallet resume; a token the issuer or the TSP suspended only they "
                            + "resume, and tokenet wallet inbox shows who did)"
                    default: ""
                    }
                throw WalletError(
                    .failedPrecondition, "\(card.cardRef) is \(state); only an ACTIVE card can pay\(next)")
            }
            // Taken first and fetched only when there was none: a look at the count before taking one let payments
            // at once on the card's last key each see it, and all but one then found none.
            var replenished = false
            var taken = try store.usePaymentKey(cardID: card.id)
            if taken == nil {
                // Bounded too, longer than a refill after a payment (nothing was paid yet, and this batch is what
                // the payment waits for), and always short of the deadline: the answer says no payment was made.
                do throws(WalletError) {
                    replenished = try await updates.replenishIfLow(
                        card, reason: "no keys left", atMost: 0,
                        within: Self.refillWait(before: context.deadline, atMost: refillWait * 5)
                    ).fetched
                } catch {
                    throw WalletError(
                        error.code,
                        "no payment was made: \(card.cardRef) has no payment keys left, and \(error.message)",
                        cause: error.cause)
                }
                taken = try store.usePaymentKey(cardID: card.id)
            }
            guard var keys = taken else {
                throw WalletError(.failedPrecondition, "\(card.cardRef) has no payment keys left; no payment was made")
            }
            // The key is spent: the payment stands whatever the new batch's fate. Failing it here said a payment that
            // had used a key had failed; the refill is asked for again by the next payment. Its wait is bounded, so
            // that a TSP that does not answer cannot keep the payment's answer past its caller's deadline.
            var problem = ""
            if keys.remaining <= WalletTokenUpdates.keyThreshold {
                do throws(WalletError) {
                    let refill = try await updates.replenishIfLow(
                        card, reason: "below threshold", atMost: WalletTokenUpdates.keyThreshold,
                        within: Self.refillWait(before: context.deadline, atMost: refillWait))
                    keys = refill.keys
                    replenished = replenished || refill.fetched
                } catch {
                    problem = error.message
                    logger.withTraceID(context.traceID).warning(
                        "payment made, but its new batch of keys could not be fetched",
                        ["card_ref": card.cardRef, "error": error.message])
                }
            }
            var answer = response(card, id, keys, replenished: replenished)
            answer.replenishmentProblem = problem
            return answer
        }
    }

    /// How long a payment that took its key waits for the card's next batch: at most `most` (2 s in a node), and at
    /// most half of what is left of the payment's deadline, so that the answer still reaches its caller.
    static func refillWait(before deadline: ContinuousClock.Instant?, atMost most: Duration) -> Duration {
        guard let deadline else { return most }
        let left = ContinuousClock.now.duration(to: deadline)
        return max(.milliseconds(1), min(most, left / 2))
    }

    private func response(_ card: WalletCardRecord, _ id: String, _ keys: PaymentKeyCount, replenished: Bool)
        -> WalletV1.PaymentKeysResponse
    {
        WalletV1.PaymentKeysResponse(
            cardRef: card.cardRef, digitalCardID: id, keysRemaining: keys.remaining,
            threshold: WalletTokenUpdates.keyThreshold, batches: keys.batches, replenished: replenished,
            tokenState: card.result?.tokenState ?? .unspecified)
    }

    private func digitalCard(_ ref: String) throws(WalletError) -> (WalletCardRecord, String) {
        let card = try store.card(ref: ref)
        guard let id = card.result?.digitalCardID, !id.isEmpty else {
            throw WalletError(
                .failedPrecondition, card.noDigitalCard)
        }
        return (card, id)
    }
}
