import TokenetStorage
import TokenetWire

/// The person's choices as the wallet's database keeps them; nil where nothing was chosen yet.
public struct StoredSelection: Sendable, Equatable {
    public var activeWalletAccountID: String?
    public var selectedCardID: Int64?
}

extension WalletStore {
    /// The choices kept by `makeActive` and `select(cardID:)`.
    public func selection() throws(WalletError) -> StoredSelection {
        try run("read the active wallet account") {
            guard let row = try database.queryOne("SELECT active_wallet_account_id, selected_card_id FROM selection")
            else { return StoredSelection() }
            return StoredSelection(
                activeWalletAccountID: try row.get(0, as: String?.self), selectedCardID: try row.get(1, as: Int64?.self)
            )
        }
    }

    /// Makes `account` the active wallet account and adds it to the accounts the person has made active.
    public func makeActive(_ account: String, nowMs: UInt64) throws(WalletError) {
        try run("store the active wallet account") {
            try database.transaction { tx in
                _ = try tx.execute(
                    "INSERT OR IGNORE INTO wallet_accounts (wallet_account_id, first_active_at_ms) VALUES (?, ?)",
                    [account, Int64(nowMs)])
                _ = try tx.execute(
                    """
                    INSERT INTO selection (id, active_wallet_account_id) VALUES (1, ?)
                    ON CONFLICT (id) DO UPDATE SET active_wallet_account_id = excluded.active_wallet_account_id
                    """, [account])
            }
        }
    }

    static let accountSelectionSchema = """
        ALTER TABLE cards ADD COLUMN selected_order INTEGER;
        UPDATE cards SET selected_order = 1 WHERE id = (SELECT selected_card_id FROM selection);
        """

    /// Keeps the selected card: the wallet's last selected, and the selected card of its own account (the one of
    /// the account's cards selected last).
    public func select(cardID: Int64) throws(WalletError) {
        try run("store the selected card") {
            try database.transaction { tx in
                _ = try tx.execute(
                    """
                    INSERT INTO selection (id, selected_card_id) VALUES (1, ?)
                    ON CONFLICT (id) DO UPDATE SET selected_card_id = excluded.selected_card_id
                    """, [cardID])
                _ = try tx.execute(
                    "UPDATE cards SET selected_order = (SELECT COALESCE(MAX(selected_order), 0) + 1 FROM cards) "
                        + "WHERE id = ?", [cardID])
            }
        }
    }

    /// The selected card of wallet account `account` (`select(cardID:)`), nil when none of its cards was selected;
    /// `configured` is the account of the cards added before cards kept theirs.
    ///
    /// A card whose token was deleted (DEACTIVATED, by the wallet, the issuer or the TSP) is no longer shown in the
    /// wallet app and never pays again, so it is not the selected card: the selection falls back to the card the
    /// account selected before it. Read from the cards themselves, so every path that deletes a token moves the
    /// selection, in the same write, and a restart keeps it moved. When every card it selected was deleted, the
    /// deletion picks the account's first ACTIVE card and stores it as selected, in its own write
    /// (`updateTokenState`): read here at each look, that card changed with states (a card turning ACTIVE became
    /// selected, a suspended one stopped being so), and the issuer app never heard.
    public func selectedCardID(of account: String, configured: String) throws(WalletError) -> Int64? {
        try run("read the selected card of wallet account \(account)") {
            try Self.selectedCardID(of: account, configured: configured) { try database.query($0, $1) }
        }
    }

    /// `selectedCardID(of:configured:)` through `query` (the database's, or a transaction's).
    static func selectedCardID(
        of account: String, configured: String, query: (String, [any SQLValueConvertible]) throws -> [Row]
    ) throws -> Int64? {
        let selected = try query(
            """
            SELECT id, result FROM cards WHERE selected_order IS NOT NULL AND COALESCE(wallet_account_id, ?) = ?
            ORDER BY selected_order DESC
            """, [configured, account])
        return try selected.first(where: { try tokenState($0) != .deactivated })?.int64(0)
    }

    /// The first ACTIVE card of wallet account `account`, in the order cards were added: the card a deletion of the
    /// selected one selects when the account selected no other live card (`updateTokenState`).
    static func firstActiveCardID(
        of account: String, configured: String, query: (String, [any SQLValueConvertible]) throws -> [Row]
    ) throws -> Int64? {
        let cards = try query(
            "SELECT id, result FROM cards WHERE COALESCE(wallet_account_id, ?) = ? ORDER BY id", [configured, account])
        return try cards.first { try tokenState($0) == .active }?.int64(0)
    }

    /// Makes `cardID` its account's selected card (the one of its cards selected last), as the wallet picks it
    /// after a deletion, without making it the person's last choice (`select(cardID:)`).
    static func adoptSelection(
        cardID: Int64, execute: (String, [any SQLValueConvertible]) throws -> ExecutionResult
    ) throws {
        _ = try execute(
            "UPDATE cards SET selected_order = (SELECT COALESCE(MAX(selected_order), 0) + 1 FROM cards) WHERE id = ?",
            [cardID])
    }

    /// The token state in the stored result of a row `id, result`; unspecified for a card without a digital card.
    private static func tokenState(_ row: Row) throws -> CardV1.TokenState {
        guard let bytes = try row.get(1, as: [UInt8]?.self) else { return .unspecified }
        return try TspV1.DigitizeResponse(serializedBytes: bytes).tokenState
    }

    /// Every account the person has made active, in the order they first did.
    public func accountsMadeActive() throws(WalletError) -> [String] {
        try run("list the wallet accounts") {
            try database.query("SELECT wallet_account_id FROM wallet_accounts ORDER BY first_active_at_ms, rowid")
                .map { try $0.text(0) }
        }
    }
}
