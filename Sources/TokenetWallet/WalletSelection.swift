import Synchronization

/// The person's current choices in the wallet app: the active wallet account and its selected card. Adding a card
/// and the push backend follow the active account, as the wallet app adds cards to the account the person is
/// using. Kept in the wallet's database, like its cards, so a restarted wallet keeps both; a new wallet starts on
/// its configured account (`walletAccountId` in wallet.json).
public final class WalletSelection: Sendable {
    struct Choices {
        var activeWalletAccountID: String
        var selectedCardRef: String
    }

    let store: WalletStore
    /// The account of wallet.json: active until the person makes another active.
    public let configuredAccountID: String
    /// The memory copy of the stored choices; a change is stored under the lock, so both agree in order.
    private let choices: Mutex<Choices>

    public init(store: WalletStore, configuredAccountID: String) throws(WalletError) {
        let stored = try store.selection()
        self.store = store
        self.configuredAccountID = configuredAccountID
        let active = stored.activeWalletAccountID ?? configuredAccountID
        choices = Mutex(
            Choices(
                activeWalletAccountID: active,
                selectedCardRef: try store.selectedCardID(of: active, configured: configuredAccountID).map(
                    WalletCardRecord.ref) ?? ""))
    }

    public var activeWalletAccountID: String { choices.withLock { $0.activeWalletAccountID } }
    public var selectedCardRef: String { choices.withLock { $0.selectedCardRef } }

    /// The wallet's accounts: the configured one and every account the person has made active.
    public func accounts() throws(WalletError) -> [String] {
        let madeActive = try store.accountsMadeActive()
        return [configuredAccountID] + madeActive.filter { $0 != configuredAccountID }
    }

    /// Makes `account` active and stores it; true when it changed. The selected card becomes the account's own
    /// (none when none of its cards was selected): the wallet app shows the active account's cards only, so the
    /// other account's card is not the one it pays with.
    func setActive(_ account: String, nowMs: UInt64) throws(WalletError) -> Bool {
        try change { (choices: inout Choices) throws(WalletError) -> Bool in
            guard choices.activeWalletAccountID != account else { return false }
            let selected = try store.selectedCardID(of: account, configured: configuredAccountID)
            try store.makeActive(account, nowMs: nowMs)
            choices.activeWalletAccountID = account
            choices.selectedCardRef = selected.map(WalletCardRecord.ref) ?? ""
            return true
        }
    }

    /// Selects the card and stores it; true when it changed.
    func select(_ card: WalletCardRecord) throws(WalletError) -> Bool {
        try change { (choices: inout Choices) throws(WalletError) -> Bool in
            guard choices.selectedCardRef != card.cardRef else { return false }
            try store.select(cardID: card.id)
            choices.selectedCardRef = card.cardRef
            return true
        }
    }

    private func change(_ body: (inout Choices) throws(WalletError) -> Bool) throws(WalletError) -> Bool {
        let outcome: Result<Bool, WalletError> = choices.withLock { choices in
            do throws(WalletError) { return .success(try body(&choices)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }
}
