import Synchronization

/// The person's current choices in the wallet app: the active wallet account and its selected card. Adding a card
/// and the push backend follow the active account, as the wallet app adds cards to the account the person is
/// using. Kept in the wallet's database, like its cards, so a restarted wallet keeps both; a new wallet starts on
/// its configured account (`walletAccountId` in wallet.json).
public final class WalletSelection: Sendable {
    /// The selected card is not kept here but read from the store (`WalletStore.selectedCardID(of:configured:)`):
    /// a deleted token moves it, and that happens on paths that know nothing of the person's choices.
    struct Choices {
        var activeWalletAccountID: String
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
        choices = Mutex(Choices(activeWalletAccountID: stored.activeWalletAccountID ?? configuredAccountID))
    }

    public var activeWalletAccountID: String { choices.withLock { $0.activeWalletAccountID } }

    /// The active account's selected card (`card-N`), empty when it has none.
    public func selectedCardRef() throws(WalletError) -> String {
        try selectedCardID(of: activeWalletAccountID).map(WalletCardRecord.ref) ?? ""
    }

    private func selectedCardID(of account: String) throws(WalletError) -> Int64? {
        try store.selectedCardID(of: account, configured: configuredAccountID)
    }

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
            try store.makeActive(account, nowMs: nowMs)
            choices.activeWalletAccountID = account
            return true
        }
    }

    /// Selects the card and stores it; true when it changed. A card the selection fell back to when the selected one
    /// was deleted is stored too when the person picks it, though the selection does not change: from then on it
    /// is their choice.
    func select(_ card: WalletCardRecord) throws(WalletError) -> Bool {
        try change { (choices: inout Choices) throws(WalletError) -> Bool in
            let before = try selectedCardID(of: choices.activeWalletAccountID)
            try store.select(cardID: card.id)
            return before != card.id
        }
    }

    private func change(_ body: (inout Choices) throws(WalletError) -> Bool) throws(WalletError) -> Bool {
        let outcome: Result<Bool, WalletError> = choices.withLock { choices in
            do throws(WalletError) { return .success(try body(&choices)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }
}
