import TokenetNode
import TokenetRPC
import TokenetWire

/// The person using the wallet sets the active wallet account or selects a card; each change is kept (a restarted
/// wallet keeps both) and is an event for the issuer app's listeners.
public struct WalletSelectionService: WalletV1.WalletSelection.ServiceProtocol {
    let selection: WalletSelection
    let store: WalletStore
    let events: WalletEventHub
    let clock: @Sendable () -> UInt64

    public init(
        selection: WalletSelection, store: WalletStore, events: WalletEventHub,
        clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs
    ) {
        self.selection = selection
        self.store = store
        self.events = events
        self.clock = clock
    }

    public func setActiveWalletAccount(_ request: WalletV1.SetActiveWalletAccountRequest, context: ServerContext)
        async throws -> WalletV1.SelectionResponse
    {
        try await answering {
            guard !request.walletAccountID.isEmpty else {
                throw WalletError(.invalidArgument, "wallet_account_id is required")
            }
            if let problem = WalletConfiguration.identifierProblem(request.walletAccountID) {
                throw WalletError(.invalidArgument, "wallet_account_id must be \(problem)")
            }
            let selectedBefore = try selection.selectedCardRef()
            let changed = try selection.setActive(request.walletAccountID, nowMs: clock())
            if changed {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .activeWalletAccountChanged, walletAccountID: request.walletAccountID, atMs: clock()))
                // The account now in use has its own selected card (or none): the issuer apps hear the selection
                // change too, or they would keep showing the other account's card as the one selected.
                let selectedNow = try selection.selectedCardRef()
                if selectedNow != selectedBefore {
                    try publishSelection(of: selectedNow, in: request.walletAccountID)
                }
            }
            return try response(changed: changed)
        }
    }

    /// Why a card whose token ended cannot be selected, and which card to pick instead. A token ends when it is
    /// deleted or when the card is added again (the TSP replaces the older token): "deleted; add the card again"
    /// sent the person who had just added it again to add it a third time. The wallet keeps no card number, so a
    /// card of the same scheme and last four digits in the same account, with a live token, is named as the one to
    /// select.
    private func endedCardRefusal(_ card: WalletCardRecord) throws(WalletError) -> String {
        let account = card.account(configured: selection.configuredAccountID)
        let siblings = try store.allCards().filter { other in
            other.id != card.id && other.scheme == card.scheme && other.panLast4 == card.panLast4
                && other.account(configured: selection.configuredAccountID) == account
        }
        let live = siblings.filter { [.active, .suspended, .inactive].contains($0.result?.tokenState) }
        let ended =
            "\(card.cardRef) is DEACTIVATED (its token was deleted, or replaced when the card was added again), "
            + "so it cannot be the selected card"
        guard let newest = live.max(by: { $0.id < $1.id }) else {
            // Added again, and waiting for its T&C (or for the TSP's answer to them): "add the card again" sent the
            // person to add it a third time.
            let waiting = siblings.filter { $0.result == nil && $0.status == .pendingTerms }.max { $0.id < $1.id }
            guard let waiting else { return ended + "; add the card again" }
            let step =
                waiting.digitizeRequestID == nil
                ? "waits for its T&C: accept them (tokenet wallet accept-terms WALLET_ADDR \(waiting.cardRef))"
                : "waits for the TSP's answer to its T&C: run tokenet wallet accept-terms WALLET_ADDR "
                    + "\(waiting.cardRef) again"
            return ended + "; \(waiting.cardRef), a card ending \(card.panLast4) in the same wallet account, \(step), "
                + "then select it"
        }
        let state = newest.result?.tokenState.protoValueName.map { String($0.dropFirst("TOKEN_STATE_".count)) }
        return ended + "; \(newest.cardRef), a card ending \(card.panLast4) in the same wallet account, is "
            + "\(state ?? "live"): select it instead"
    }

    public func selectCard(_ request: WalletV1.SelectCardRequest, context: ServerContext) async throws
        -> WalletV1.SelectionResponse
    {
        try await answering {
            let card = try store.card(ref: request.cardRef)
            guard let result = card.result, !result.digitalCardID.isEmpty else {
                throw WalletError(
                    .failedPrecondition, card.noDigitalCard)
            }
            // A deleted token never pays again: the wallet app no longer shows its card, so nobody picks it.
            guard result.tokenState != .deactivated else {
                throw WalletError(.failedPrecondition, try endedCardRefusal(card))
            }
            // The wallet app shows the active account's cards only: a card of another account cannot be picked.
            let account = card.account(configured: selection.configuredAccountID)
            guard account == selection.activeWalletAccountID else {
                throw WalletError(
                    .failedPrecondition,
                    "\(card.cardRef) is in wallet account \(account), not in the active one "
                        + "(\(selection.activeWalletAccountID)): make \(account) active first (tokenet wallet use-account)"
                )
            }
            let changed = try selection.select(card)
            if changed {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .selectedCardChanged, walletAccountID: selection.activeWalletAccountID,
                        digitalCardID: result.digitalCardID, tokenState: result.tokenState, atMs: clock()),
                    cardIssuerNodeID: card.issuerNodeID)
            }
            return try response(changed: changed)
        }
    }

    /// SELECTED_CARD_CHANGED for the card `cardRef` of `account`, without a card when none is selected there.
    private func publishSelection(of cardRef: String, in account: String) throws(WalletError) {
        let card = cardRef.isEmpty ? nil : try store.card(ref: cardRef)
        events.publish(
            WalletV1.WalletEvent(
                kind: .selectedCardChanged, walletAccountID: account,
                digitalCardID: card?.result?.digitalCardID ?? "", tokenState: card?.result?.tokenState ?? .unspecified,
                atMs: clock()),
            cardIssuerNodeID: card?.issuerNodeID)
    }

    private func response(changed: Bool) throws(WalletError) -> WalletV1.SelectionResponse {
        WalletV1.SelectionResponse(
            activeWalletAccountID: selection.activeWalletAccountID, selectedCardRef: try selection.selectedCardRef(),
            changed: changed)
    }
}
