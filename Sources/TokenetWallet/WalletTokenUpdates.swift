import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// What the wallet does when a token's state or payment keys change, whoever started it (the person using the
/// wallet, or the issuer or TSP through a CPS or MG notification): the store is updated, the issuer app's listeners
/// hear TOKEN_STATUS_CHANGED (TOKENIZED_CARD_REMOVED for a deleted token); payment keys are fetched in batches.
struct WalletTokenUpdates: Sendable {
    /// At or below this many keys left, the wallet asks the TSP for a new batch.
    static let keyThreshold: UInt32 = 3

    let tsp: TspV1.TokenLifecycle.Client
    let store: WalletStore
    let events: WalletEventHub
    /// The account of cards stored before the wallet recorded each card's account (the configured one); an event
    /// about a card names the card's own account.
    let configuredAccountID: String
    let logger: Logger
    let clock: @Sendable () -> UInt64
    /// Key-batch requests on their way, one per card, shared by every copy of these updates.
    let keyRequests = CardKeyRequests()

    /// Stores the token's new state and emits the event when the store changed (`PaymentKeysAtActivation` hears it):
    /// once per change, though `card` may have been read before another path stored the same state. A state older
    /// than the stored one (`version`, see `WalletStore.updateTokenState`) changes nothing, unless `overriding`: the
    /// TSP's own state, confirmed, replaces one an issuer app claimed at a version the TSP never gave.
    @discardableResult
    func apply(
        _ state: CardV1.TokenState, version: UInt64, to card: WalletCardRecord, overriding: Bool = false
    ) throws(WalletError) -> WalletCardRecord {
        try Self.requireKnown(state, of: card)
        let account = card.account(configured: configuredAccountID)
        let selectedBefore = state == .deactivated ? try selectedCard(of: account) : nil
        let (stored, changed) = try store.updateTokenState(
            id: card.id, state: state, version: version, overriding: overriding, nowMs: clock(),
            account: (account, configured: configuredAccountID))
        guard changed, let digitalCardID = stored.result?.digitalCardID else { return stored }
        events.publish(
            WalletV1.WalletEvent(
                kind: state == .deactivated ? .tokenizedCardRemoved : .tokenStatusChanged,
                walletAccountID: account, digitalCardID: digitalCardID, tokenState: state, atMs: clock()),
            cardIssuerNodeID: stored.issuerNodeID)
        // The store moved the selection with the delete (to the account's first ACTIVE card when no card it selected
        // before is left).
        if let selectedBefore, selectedBefore == card.id { try announceSelection(of: account) }
        return stored
    }

    /// Refuses a state that is not one a token can be in (UNSPECIFIED, or a number from a newer protocol): taken as
    /// it came, it replaced the card's state, and the card showed state "?" with nothing said.
    static func requireKnown(_ state: CardV1.TokenState, of card: WalletCardRecord) throws(WalletError) {
        guard !isKnown(state) else { return }
        try requireKnown(
            state, of: "\(card.cardRef)'s token", keeps: card.result?.tokenState.protoValueName ?? "no state yet")
    }

    /// `requireKnown` for a token named `what` whose card keeps `held`.
    static func requireKnown(_ state: CardV1.TokenState, of what: String, keeps held: String) throws(WalletError) {
        guard !isKnown(state) else { return }
        throw WalletError(
            .failedPrecondition,
            "the TSP gave \(what) state \(state.protoValueName ?? "number \(state.rawValue)"), which is not a state "
                + "this wallet knows; the card keeps \(held)")
    }

    /// Whether `state` is one a token can be in.
    static func isKnown(_ state: CardV1.TokenState) -> Bool {
        switch state {
        case .inactive, .active, .suspended, .deactivated: true
        case .unspecified, .unrecognized: false
        }
    }

    private func selectedCard(of account: String) throws(WalletError) -> Int64? {
        try store.selectedCardID(of: account, configured: configuredAccountID)
    }

    /// The selected card was deleted, and the selection moved (`WalletStore.selectedCardID`): the issuer apps hear
    /// SELECTED_CARD_CHANGED with the card now selected (none when the account holds no other), as after a choice
    /// of the person, or they would keep showing the deleted card as the one the wallet pays with. Only for the
    /// active account, whose selection the wallet app shows; a switch to another account announces its own.
    private func announceSelection(of account: String) throws(WalletError) {
        let active = try store.selection().activeWalletAccountID ?? configuredAccountID
        guard account == active else { return }
        var now: WalletCardRecord?
        if let id = try selectedCard(of: account) { now = try store.card(ref: WalletCardRecord.ref(id)) }
        events.publish(
            WalletV1.WalletEvent(
                kind: .selectedCardChanged, walletAccountID: account, digitalCardID: now?.result?.digitalCardID ?? "",
                tokenState: now?.result?.tokenState ?? .unspecified, atMs: clock()),
            cardIssuerNodeID: now?.issuerNodeID)
    }

    /// Asks the TSP for a new batch of keys for the card's token and stores it. With `ifAtMost` (a payment's own
    /// request), one request per card is on its way at a time (`CardKeyRequests`), and a request that finds more
    /// than `ifAtMost` keys left once its turn comes (a batch another payment asked for) asks for none.
    @discardableResult
    func replenish(_ card: WalletCardRecord, reason: String, ifAtMost limit: UInt32? = nil)
        async throws(WalletError) -> PaymentKeyCount
    {
        guard let digitalCardID = card.result?.digitalCardID, !digitalCardID.isEmpty else {
            throw WalletError(.failedPrecondition, "\(card.cardRef) has no digital card")
        }
        // A batch asked for by name (an MG push, an activation) is fetched as asked. One asked for while another
        // request for the card is on its way carries that request's id, and so shares its batch.
        guard let limit else {
            return try await fetchBatch(card, digitalCardID: digitalCardID, reason: reason, timeout: nil)
        }
        return try await replenishIfLow(card, reason: reason, atMost: limit).keys
    }

    /// `replenish(_:reason:ifAtMost:)`, saying whether this request fetched the batch (rather than finding one
    /// another payment asked for): a payment says "a new batch was fetched" only for its own.
    /// `timeout`, when given, bounds the whole request below the caller's own deadline, its turn included (another
    /// request for the card, a background top-up, may be waiting on the TSP): a payment must not wait its whole
    /// deadline on a TSP that does not answer.
    func replenishIfLow(_ card: WalletCardRecord, reason: String, atMost limit: UInt32, within timeout: Duration? = nil)
        async throws(WalletError) -> (keys: PaymentKeyCount, fetched: Bool)
    {
        guard let digitalCardID = card.result?.digitalCardID, !digitalCardID.isEmpty else {
            throw WalletError(.failedPrecondition, "\(card.cardRef) has no digital card")
        }
        let request = { @Sendable () async throws -> (keys: PaymentKeyCount, fetched: Bool) in
            try await keyRequests.one(card: card.id) {
                let now = try store.paymentKeys(cardID: card.id)
                if now.remaining > limit { return (now, false) }
                return (
                    try await fetchBatch(card, digitalCardID: digitalCardID, reason: reason, timeout: timeout), true
                )
            }
        }
        do {
            guard let timeout else { return try await request() }
            return try await Self.within(timeout, request)
        } catch let error as WalletError {
            throw error
        } catch {
            throw WalletError(.internal, "the key batch request failed: \(error)")
        }
    }

    /// `body`'s result, or UNAVAILABLE once `limit` has passed, `body` then cancelled (a request waiting for its
    /// turn gives it up; one on its way to the TSP is cancelled there, and its id is kept for the next).
    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            if let value = try await group.next(), let value { return value }
            let milliseconds = limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000
            throw WalletError(
                .unavailable, "the TSP's ReplenishPaymentKeys did not answer within \(milliseconds) ms")
        }
    }

    private func fetchBatch(_ card: WalletCardRecord, digitalCardID: String, reason: String, timeout: Duration?)
        async throws(WalletError) -> PaymentKeyCount
    {
        let before = try store.paymentKeys(cardID: card.id)
        // Stored before the call: the same request asked again after a lost answer or a restart gets the batch the
        // TSP issued for it, not a second one.
        let requestID = try store.keyRequestID(cardID: card.id)
        let batch: TspV1.ReplenishPaymentKeysResponse
        do {
            batch = try await tsp.replenishPaymentKeys(
                TspV1.ReplenishPaymentKeysRequest(
                    digitalCardID: digitalCardID, keysRemaining: before.remaining, requestID: requestID),
                options: CallOptions(timeout: timeout ?? TSPCalls.backgroundWait))
        } catch let error as RPCError {
            throw WalletError(Self.code(of: error), "the TSP's ReplenishPaymentKeys failed: \(error.message)")
        } catch {
            throw WalletError(.unavailable, "the TSP's ReplenishPaymentKeys failed: \(error)")
        }
        guard let after = try store.recordKeyBatch(cardID: card.id, count: batch.keysIssued, requestID: requestID)
        else {
            logger.info(
                "payment key batch already recorded: another request for the card carried the same id",
                ["card_ref": card.cardRef, "reason": reason])
            return try store.paymentKeys(cardID: card.id)
        }
        logger.info(
            batch.reissued
                ? "payment keys replenished with the batch issued for an earlier request whose answer was not recorded"
                : "payment keys replenished",
            ["card_ref": card.cardRef, "reason": reason, "issued": "\(batch.keysIssued)", "left": "\(after.remaining)"])
        return after
    }

    /// The wallet's code for the TSP's refusal of a key batch. Only a TSP that may answer otherwise later is
    /// UNAVAILABLE (the MG push is then delivered again, and the catch-up at start asks again); a refusal that
    /// asking again cannot change (a token the TSP does not know, or says is not this wallet's) is not, or the
    /// push would come back forever and hold back every later message of the wallet's queue.
    static func code(of error: RPCError) -> WalletError.Code {
        switch error.code {
        case .notFound: .notFound
        case .failedPrecondition, .permissionDenied, .invalidArgument, .outOfRange, .alreadyExists, .unimplemented:
            .failedPrecondition
        default: .unavailable
        }
    }
}
