import Synchronization
import TokenetNode
import TokenetRPC
import TokenetWire

/// The wallet app's current choices, shared by the selection service and the issuer app's pull.
public final class WalletSelection: Sendable {
    struct Choices {
        var activeWalletAccountID: String
        var selectedCardRef = ""
    }

    private let choices: Mutex<Choices>

    public init(activeWalletAccountID: String) {
        choices = Mutex(Choices(activeWalletAccountID: activeWalletAccountID))
    }

    public var activeWalletAccountID: String { choices.withLock { $0.activeWalletAccountID } }
    public var selectedCardRef: String { choices.withLock { $0.selectedCardRef } }

    /// Sets the active account; true when it changed.
    func setActive(_ account: String) -> Bool {
        choices.withLock { choices in
            defer { choices.activeWalletAccountID = account }
            return choices.activeWalletAccountID != account
        }
    }

    /// Selects the card; true when it changed.
    func select(_ ref: String) -> Bool {
        choices.withLock { choices in
            defer { choices.selectedCardRef = ref }
            return choices.selectedCardRef != ref
        }
    }
}

/// The person using the wallet sets the active wallet account or selects a card; each change is an event for the
/// issuer app's listeners.
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
            let changed = selection.setActive(request.walletAccountID)
            if changed {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .activeWalletAccountChanged, walletAccountID: request.walletAccountID, atMs: clock()))
            }
            return response(changed: changed)
        }
    }

    public func selectCard(_ request: WalletV1.SelectCardRequest, context: ServerContext) async throws
        -> WalletV1.SelectionResponse
    {
        try await answering {
            let card = try store.card(ref: request.cardRef)
            guard let result = card.result, !result.digitalCardID.isEmpty else {
                throw WalletError(
                    .failedPrecondition, "\(card.cardRef) has no digital card (status \(card.status.rawValue))")
            }
            let changed = selection.select(card.cardRef)
            if changed {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .selectedCardChanged, walletAccountID: selection.activeWalletAccountID,
                        digitalCardID: result.digitalCardID, tokenState: result.tokenState, atMs: clock()))
            }
            return response(changed: changed)
        }
    }

    private func response(changed: Bool) -> WalletV1.SelectionResponse {
        WalletV1.SelectionResponse(
            activeWalletAccountID: selection.activeWalletAccountID, selectedCardRef: selection.selectedCardRef,
            changed: changed)
    }
}
