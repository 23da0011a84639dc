import Synchronization
import TokenetWire

/// The issuer app's table of its cards in the wallet. Pure: a pull replaces the table (the wallet's states are the
/// truth at that moment, and a restarted wallet numbers its events from 1 again), an event changes one row; events
/// at or below the last applied sequence are ignored.
public struct AppViewTable: Equatable, Sendable {
    public struct Row: Equatable, Sendable {
        public var tokenState: CardV1.TokenState
        public var updatedBy: String
        public var removed: Bool
    }

    public private(set) var rows: [String: Row] = [:]
    public private(set) var walletAccountID = ""
    /// The card selected in the wallet app, from SELECTED_CARD_CHANGED and from a pull (which a restarted app
    /// starts with: without it, the app forgot the selection until the next change).
    public private(set) var selectedDigitalCardID = ""
    public private(set) var lastSequence: UInt64 = 0
    public private(set) var pulls: UInt32 = 0
    public var listening = false
    /// The removed rows, oldest removal first: past `removedRowsKept` the oldest goes. A removed row stays to show
    /// the card gone and to keep a late event from bringing it back; kept for every token ever deleted, the table
    /// grew with each one, and past about 12,000 its answer would no longer fit in a message.
    private var removals: [String] = []

    /// How many removed rows the view keeps.
    public static let removedRowsKept = 256

    public init() {}

    public mutating func apply(pull: WalletV1.CurrentTokensResponse) {
        pulls += 1
        lastSequence = 0
        walletAccountID = pull.walletAccountID
        selectedDigitalCardID = pull.selectedDigitalCardID
        rows = [:]
        removals = []
        // A deleted token the wallet still lists is removed, as the events and CARD_STATE mark it: a restarted app
        // showed as a DEACTIVATED card what it had shown as removed before.
        for token in pull.tokens {
            set(
                token.digitalCardID,
                Row(tokenState: token.tokenState, updatedBy: "pull", removed: token.tokenState == .deactivated))
        }
    }

    /// Sets a row, counting a removed one among the removals and forgetting the oldest past `removedRowsKept`.
    private mutating func set(_ digitalCardID: String, _ row: Row) {
        let wasRemoved = rows[digitalCardID]?.removed ?? false
        rows[digitalCardID] = row
        guard row.removed else {
            if wasRemoved { removals.removeAll { $0 == digitalCardID } }
            return
        }
        if wasRemoved { return }
        removals.append(digitalCardID)
        if removals.count > Self.removedRowsKept { rows[removals.removeFirst()] = nil }
    }

    public mutating func apply(event: WalletV1.WalletEvent) {
        guard event.sequence == 0 || event.sequence > lastSequence else { return }
        lastSequence = max(lastSequence, event.sequence)
        let name = event.kind.protoValueName ?? "UNKNOWN"
        switch event.kind {
        case .activeWalletAccountChanged:
            walletAccountID = event.walletAccountID
        case .tokenizedCardAdded, .tokenStatusChanged:
            guard !event.digitalCardID.isEmpty, !isDeleted(event.digitalCardID) else { return }
            set(event.digitalCardID, Row(tokenState: event.tokenState, updatedBy: name, removed: false))
        case .tokenizedCardRemoved:
            guard !event.digitalCardID.isEmpty else { return }
            // A wallet removes a card whose token is DEACTIVATED, and says so: that state stands whatever came
            // before. A TSP's CARD_STATE DEACTIVATED that arrived before the wallet's event adding the card (a token
            // replaced as it was added) changed no row, and the row kept the added event's INACTIVE for good.
            let state =
                event.tokenState == .deactivated
                ? .deactivated : rows[event.digitalCardID]?.tokenState ?? event.tokenState
            set(event.digitalCardID, Row(tokenState: state, updatedBy: name, removed: true))
        case .selectedCardChanged:
            selectedDigitalCardID = event.digitalCardID
        case .unspecified, .unrecognized:
            return
        }
    }

    /// A CPS CARD_STATE message from the TSP's broker: the card's state as the TSP has it now. A deleted token's row
    /// is kept, marked removed, like after the wallet's TOKENIZED_CARD_REMOVED.
    ///
    /// Once the app has pulled a wallet's tokens, the view is that wallet's: the TSP tells the issuer of its tokens
    /// in every wallet, and a token of another wallet node showed here until a restart's pull dropped it. Such a
    /// token changes no row; one of this wallet's that the message comes before is added by the wallet's own event.
    public mutating func apply(cardState: CardV1.TokenState, digitalCardID: String) {
        guard !digitalCardID.isEmpty, !isDeleted(digitalCardID) else { return }
        guard pulls == 0 || rows[digitalCardID] != nil else { return }
        set(digitalCardID, Row(tokenState: cardState, updatedBy: "CARD_STATE", removed: cardState == .deactivated))
    }

    /// The token is DEACTIVATED: deleted for good (the TSP never changes a deleted token), so nothing heard after
    /// it changes its row. CARD_STATE comes through the TSP's broker and the wallet's events through the wallet's
    /// stream, and a wallet event from before the delete can arrive after the TSP's DEACTIVATED.
    private func isDeleted(_ digitalCardID: String) -> Bool {
        rows[digitalCardID]?.tokenState == .deactivated
    }

    /// The table as `IssuerApp.CardView` answers, rows sorted by digital card id.
    public var response: IssuerV1.CardViewResponse {
        IssuerV1.CardViewResponse(
            listening: listening, walletAccountID: walletAccountID, lastSequence: lastSequence,
            cards: rows.keys.sorted().map { id in
                let row = rows[id]!
                return IssuerV1.AppCard(
                    digitalCardID: id, tokenState: row.tokenState, updatedBy: row.updatedBy, removed: row.removed)
            },
            pulls: pulls, selectedDigitalCardID: selectedDigitalCardID)
    }
}

/// The app view shared by the listener task and the `IssuerApp` service.
public final class IssuerAppView: Sendable {
    private let table = Mutex(AppViewTable())

    public init() {}

    public func update(_ change: (inout AppViewTable) -> Void) {
        table.withLock { change(&$0) }
    }

    public var snapshot: AppViewTable {
        table.withLock { $0 }
    }
}
