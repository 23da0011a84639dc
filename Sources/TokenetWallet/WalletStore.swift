import Foundation
import TokenetStorage
import TokenetWire

/// The wallet's SQLite database: one row per card it was asked to add and found eligible.
///
/// Every change is one statement in one transaction. The card number is never stored: only its last four digits.
public final class WalletStore: Sendable {
    let database: Database
    /// What opening the database did to its schema (nil: it was up to date), for the node's log.
    public let schemaChange: SchemaChange?

    static let migrations = [
        Migration(
            version: 1, name: "cards",
            sql: """
                CREATE TABLE cards (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    source TEXT NOT NULL,
                    scheme INTEGER NOT NULL,
                    pan_last4 TEXT NOT NULL,
                    status TEXT NOT NULL CHECK (status IN ('PENDING_TERMS', 'DIGITIZED', 'DECLINED')),
                    eligibility_receipt TEXT NOT NULL,
                    receipt_expires_at_ms INTEGER NOT NULL,
                    terms BLOB,
                    digitize_request_id TEXT UNIQUE,
                    terms_accepted_at_ms INTEGER,
                    result BLOB,
                    created_at_ms INTEGER NOT NULL,
                    updated_at_ms INTEGER NOT NULL
                );
                """),
        Migration(
            version: 2, name: "notifications",
            sql: """
                CREATE TABLE inbox (
                    message_id TEXT PRIMARY KEY,
                    received_at_ms INTEGER NOT NULL,
                    notification BLOB NOT NULL
                );
                CREATE TABLE transactions (
                    transaction_id TEXT PRIMARY KEY,
                    digital_card_id TEXT NOT NULL,
                    amount_minor INTEGER NOT NULL,
                    currency TEXT NOT NULL,
                    merchant TEXT NOT NULL,
                    approved INTEGER NOT NULL,
                    transaction_at_ms INTEGER NOT NULL,
                    last_call_ms INTEGER NOT NULL
                );
                CREATE TABLE payment_keys (
                    card_id INTEGER PRIMARY KEY REFERENCES cards(id),
                    remaining INTEGER NOT NULL,
                    batches INTEGER NOT NULL
                );
                """),
        // A card's wallet account is the one active when it was added; NULL for the cards added before this
        // migration, which were all added under the configured account. The person's choices (the active account,
        // the selected card) and every account they made active survive a restart.
        Migration(
            version: 3, name: "wallet_accounts",
            sql: """
                ALTER TABLE cards ADD COLUMN wallet_account_id TEXT;
                CREATE TABLE wallet_accounts (
                    wallet_account_id TEXT PRIMARY KEY,
                    first_active_at_ms INTEGER NOT NULL
                );
                CREATE TABLE selection (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    active_wallet_account_id TEXT,
                    selected_card_id INTEGER REFERENCES cards(id)
                );
                """),
        // A card's issuer, as the TSP named it when it digitized the card: its id and the node id of the issuer app
        // the wallet shows the card to. NULL for the cards digitized before this migration (and for cards from a TSP
        // that names no issuer): no issuer app sees those until the wallet has asked the TSP whose they are
        // (`WalletIssuerResolver`), since showing them to every app was what gave one bank's app another bank's cards.
        Migration(
            version: 4, name: "card_issuers",
            sql: """
                ALTER TABLE cards ADD COLUMN issuer_id TEXT;
                ALTER TABLE cards ADD COLUMN issuer_node_id TEXT;
                """),
        // The orders `ListTransactions` pages walk, for every card and for one: time, then row id (which an index
        // holds). Without them each page read and sorted every transaction the wallet was notified of.
        Migration(
            version: 5, name: "transaction_listing_order",
            sql: """
                CREATE INDEX transactions_made ON transactions(transaction_at_ms);
                CREATE INDEX transactions_card_made ON transactions(digital_card_id, transaction_at_ms);
                """),
        // The order an issuer app's `CurrentTokens` pages walk: its own digitized cards, by id (which the index
        // holds). Without it each page read every card of every issuer.
        Migration(
            version: 6, name: "issuer_token_listing_order",
            sql: "CREATE INDEX cards_issuer_node ON cards(issuer_node_id, status);"),
        // A card's digital card id beside its stored result, and an index on it, so that a notification or an issuer
        // app naming a token finds its card with one indexed read instead of reading and decoding every card. The
        // cards digitized before this migration get theirs from their stored result when the store opens
        // (`fillDigitalCardIDs`): SQL cannot read inside the serialized answer.
        Migration(
            version: 7, name: "card_digital_ids",
            sql: """
                ALTER TABLE cards ADD COLUMN digital_card_id TEXT;
                CREATE INDEX cards_digital_card ON cards(digital_card_id);
                """),
        // Each wallet account has its own selected card: the one of its cards selected last (`selected_order`), so
        // a switch of account answers with the card of the account now in use, and switching back finds the first
        // account's card still selected. The card selected before this migration is the first selected.
        Migration(version: 8, name: "account_selections", sql: WalletStore.accountSelectionSchema),
        // The id of the key-batch request a card has on its way (`ReplenishPaymentKeysRequest.request_id`), kept
        // until its batch is recorded: a request whose answer was lost, or that the wallet stopped before recording,
        // is asked again with it and the TSP answers with the batch it issued then.
        Migration(
            version: 9, name: "payment_key_request_ids",
            sql: "ALTER TABLE payment_keys ADD COLUMN pending_request_id TEXT;"),
        // A token's state heard before the wallet recorded the digitization that made it (`WalletStore+EarlyStates`).
        Migration(
            version: 10, name: "early_card_states",
            sql: """
                CREATE TABLE early_card_states (
                    digital_card_id TEXT PRIMARY KEY,
                    token_state INTEGER NOT NULL,
                    state_version INTEGER NOT NULL,
                    received_at_ms INTEGER NOT NULL
                );
                """),
        // Why the issuer app did not activate the card's token the last time it was opened (its failure's reason),
        // shown with the card until the token's state changes: the outcome was only in the wallet's log.
        Migration(
            version: 11, name: "card_activation_failures",
            sql: "ALTER TABLE cards ADD COLUMN activation_failure TEXT;"),
    ]

    public init(database: Database) throws(WalletError) {
        self.database = database
        do {
            schemaChange = SchemaChange(
                applied: try Migrator(Self.migrations).migrate(database), among: Self.migrations)
        } catch {
            // A StorageError is kept as it is, so the node can tell a database it must not start on by its code.
            throw WalletError(
                .internal, "cannot open the wallet database \(database.path ?? "")",
                cause: (error as? StorageError) ?? DescribedCause(error))
        }
        try fillDigitalCardIDs()
    }

    /// Opens (creating if needed) the database at `path`.
    public static func open(path: String) throws(WalletError) -> WalletStore {
        do {
            // Read as it is first: opened as the wallet's own, a file that is not (another program's, another
            // party's) was switched to WAL and had its mode narrowed before it was refused as "left untouched".
            try Migrator(Self.migrations).checkOwnership(ofFileAt: path)
            return try WalletStore(database: try Database.open(path: path))
        } catch let error as WalletError {
            // Damage found past the file's header (by the migrations' first read) was reported as a migration
            // that failed, without the file or what to do.
            guard let storage = error.cause as? StorageError, storage.code == .corrupt else { throw error }
            throw damaged(path, storage)
        } catch let error as StorageError where error.code == .corrupt {
            throw damaged(path, error)
        } catch let error as StorageError {
            // Kept as it is, so the node can tell a database it must not start on (read-only) by its code.
            throw WalletError(.internal, "cannot open the wallet database \(path)", cause: error)
        } catch {
            throw WalletError(.internal, "cannot open the wallet database \(path)", cause: DescribedCause(error))
        }
    }

    /// A database file SQLite finds damaged, or that is not a database: the operator's to restore.
    private static func damaged(_ path: String, _ error: StorageError) -> WalletError {
        WalletError(
            .internal,
            "the wallet database \(path) is damaged: restore it from a backup, or move it aside to start with an "
                + "empty wallet", cause: error)
    }

    public static func inMemory() throws(WalletError) -> WalletStore {
        do {
            return try WalletStore(database: try Database.openInMemory())
        } catch let error as WalletError {
            throw error
        } catch {
            throw WalletError(.internal, "cannot open an in-memory database", cause: DescribedCause(error))
        }
    }

    /// Keeps an eligible card awaiting the cardholder's acceptance of the T&C, in the wallet account its eligibility
    /// was checked for (the TSP's eligibility receipt is bound to that account).
    public func addPending(
        source: WalletCardSource, scheme: CardV1.CardScheme, panLast4: String, receipt: String,
        receiptExpiresAtMs: UInt64, terms: CardV1.TermsAndConditions?, walletAccountID: String, nowMs: UInt64
    ) throws(WalletError) -> WalletCardRecord {
        try run("store the new card") {
            let termsBytes = try terms.map { try $0.serializedBytes() }
            let id = try database.transaction { tx in
                _ = try tx.execute(
                    """
                    INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                        terms, wallet_account_id, created_at_ms, updated_at_ms)
                    VALUES (?, ?, ?, 'PENDING_TERMS', ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        source.rawValue, Int64(scheme.rawValue), panLast4, receipt, Int64(clamping: receiptExpiresAtMs),
                        termsBytes, walletAccountID, Int64(nowMs), Int64(nowMs),
                    ])
                return try tx.lastInsertRowID
            }
            guard let card = try self.fetch(id) else { throw WalletError(.internal, "the new card vanished") }
            return card
        }
    }

    /// The card named `ref` (`card-N`).
    public func card(ref: String) throws(WalletError) -> WalletCardRecord {
        guard let id = WalletCardRecord.id(fromRef: ref) else {
            throw WalletError(.invalidArgument, "'\(ref)' is not a card reference; they look like card-1")
        }
        let card = try run("read the card") { try fetch(id) }
        guard let card else { throw WalletError(.notFound, "the wallet has no card \(ref)") }
        return card
    }

    public func allCards() throws(WalletError) -> [WalletCardRecord] {
        try run("list the cards") {
            try database.query("SELECT * FROM cards ORDER BY id").map(Self.record)
        }
    }

    /// The cards whose Digitize was sent (their request id is recorded) and never answered: they list as
    /// DIGITIZING.
    public func unansweredDigitizations() throws(WalletError) -> [WalletCardRecord] {
        try run("list the cards waiting for their digitization") {
            try database.query(
                """
                SELECT * FROM cards
                WHERE status = 'PENDING_TERMS' AND result IS NULL AND digitize_request_id IS NOT NULL ORDER BY id
                """
            ).map(Self.record)
        }
    }

    /// Records the idempotency key and acceptance time of the first Digitize attempt, unless an attempt already
    /// recorded its own; returns the card as stored, whose key the caller must use.
    public func beginDigitization(
        id: Int64, requestID: String, termsAcceptedAtMs: UInt64, nowMs: UInt64
    ) throws(WalletError) -> WalletCardRecord {
        try run("record the digitization request") {
            try database.transaction { tx in
                _ = try tx.execute(
                    """
                    UPDATE cards SET digitize_request_id = ?, terms_accepted_at_ms = ?, updated_at_ms = ?
                    WHERE id = ? AND digitize_request_id IS NULL
                    """, [requestID, Int64(termsAcceptedAtMs), Int64(nowMs), id])
            }
            guard let card = try fetch(id) else { throw WalletError(.notFound, "the card vanished") }
            return card
        }
    }

    /// Stores the TSP's answer: the digital card (id, last four, scheme, token state) or the decline, and the issuer
    /// it names, whose app alone sees the card. A later state of the token heard before the answer (its CARD_STATE
    /// overtook it) is applied to it (`withEarlyState`).
    public func finishDigitization(
        id: Int64, result: TspV1.DigitizeResponse, nowMs: UInt64
    ) throws(WalletError) -> WalletCardRecord {
        try finishDigitizationOnce(id: id, result: result, nowMs: nowMs).card
    }

    /// `finishDigitization`, saying whether this call recorded the answer: two callers may finish one card at once
    /// (a person's accept-terms and the wallet's resume), and only the one that recorded it announces the card.
    public func finishDigitizationOnce(
        id: Int64, result: TspV1.DigitizeResponse, nowMs: UInt64
    ) throws(WalletError) -> (card: WalletCardRecord, recorded: Bool) {
        try run("store the digital card") {
            let issuerID: String? = result.issuerID.isEmpty ? nil : result.issuerID
            let issuerNodeID: String? = result.issuerNodeID.isEmpty ? nil : result.issuerNodeID
            let recorded = try database.transaction { tx in
                let result = try Self.withEarlyState(result, in: tx)
                let bytes = try result.serializedBytes()
                return try tx.execute(
                    """
                    UPDATE cards SET status = ?, result = ?, digital_card_id = ?, issuer_id = ?, issuer_node_id = ?,
                        updated_at_ms = ?
                    WHERE id = ? AND result IS NULL
                    """,
                    [
                        result.walletStatus.rawValue, bytes, result.digitalCardID, issuerID, issuerNodeID,
                        Int64(nowMs), id,
                    ]
                ).changes == 1
            }
            guard let card = try fetch(id) else { throw WalletError(.notFound, "the card vanished") }
            return (card, recorded)
        }
    }

    /// Records the token state the TSP reported on the stored digitization result, and whether it changed it. The
    /// change is judged in the write's own transaction, not against a card read before: the TSP's answer and its
    /// CARD_STATE about the same change race, and whichever comes second must find nothing to announce.
    ///
    /// `version` is the TSP's version of that state (`DigitizeResponse.state_version`; 0 when the message carried
    /// none). A state older than the one stored is ignored: the answer to the wallet's own suspend can arrive after
    /// the CARD_STATE of a later resume by the issuer, and storing it would leave the card SUSPENDED while the TSP
    /// holds it ACTIVE. A state without a version is stored as before. DEACTIVATED is final whatever the version:
    /// the TSP never changes a deleted token, so a state heard after the delete is stale (or not the TSP's) and
    /// must not make a deleted card live again; for the same reason a DEACTIVATED is stored whatever its version, so
    /// a version that did not come from the TSP cannot keep a deleted token live in the wallet.
    ///
    /// `from`: the change is made only when the stored state is that one (judged in the same transaction).
    /// `account` (with the `configured` account of cards stored before cards kept theirs), given for a delete: when
    /// the card was its account's selected card and no card the account selected before is left, its first ACTIVE
    /// card is selected in the same write, so that neither a crash nor a choice made meanwhile loses or overrides it.
    public func updateTokenState(
        id: Int64, state: CardV1.TokenState, version: UInt64 = 0, from: CardV1.TokenState? = nil,
        overriding: Bool = false, nowMs: UInt64, account: (String, configured: String)? = nil
    ) throws(WalletError) -> (card: WalletCardRecord, changed: Bool) {
        try run("update the card's token state") {
            let changed = try database.transaction { tx in
                guard let row = try tx.queryOne("SELECT result FROM cards WHERE id = ?", [id]),
                    let bytes = try row.get(0, as: [UInt8]?.self)
                else { throw WalletError(.failedPrecondition, "\(WalletCardRecord.ref(id)) has no digital card") }
                var result = try TspV1.DigitizeResponse(serializedBytes: bytes)
                guard result.tokenState != .deactivated else { return false }
                if let from, result.tokenState != from { return false }
                guard overriding || version == 0 || version > result.stateVersion || state == .deactivated else {
                    return false
                }
                let changed = result.tokenState != state
                guard changed || version > result.stateVersion else { return false }
                result.tokenState = state
                // Overriding: the TSP's own state and version replace a version only a claim could have made.
                result.stateVersion = overriding ? version : max(result.stateVersion, version)
                var wasSelected = false
                if state == .deactivated, let (name, configured) = account {
                    let selected = try Self.selectedCardID(of: name, configured: configured) { try tx.query($0, $1) }
                    wasSelected = selected == id
                }
                _ = try tx.execute(
                    "UPDATE cards SET result = ?, updated_at_ms = ? WHERE id = ?",
                    [try result.serializedBytes(), Int64(nowMs), id])
                // A failed in-app activation is told until the token moves on (activated by another way, deleted).
                if changed { _ = try tx.execute("UPDATE cards SET activation_failure = NULL WHERE id = ?", [id]) }
                if wasSelected, let (name, configured) = account,
                    try Self.selectedCardID(of: name, configured: configured, query: { try tx.query($0, $1) }) == nil,
                    let fallback = try Self.firstActiveCardID(
                        of: name, configured: configured, query: { try tx.query($0, $1) })
                {
                    try Self.adoptSelection(cardID: fallback) { try tx.execute($0, $1) }
                }
                return changed
            }
            guard let card = try fetch(id) else { throw WalletError(.notFound, "the card vanished") }
            return (card, changed)
        }
    }

    func fetch(_ id: Int64) throws -> WalletCardRecord? {
        try database.queryOne("SELECT * FROM cards WHERE id = ?", [id]).map(Self.record)
    }

    static func record(_ row: Row) throws -> WalletCardRecord {
        let termsBytes: [UInt8]? = try row.get("terms")
        let resultBytes: [UInt8]? = try row.get("result")
        let accepted: Int64? = try row.get("terms_accepted_at_ms")
        guard let source = WalletCardSource(rawValue: try row.text("source")),
            let status = WalletCardStatus(rawValue: try row.text("status"))
        else { throw WalletError(.internal, "a stored card has an unknown source or status") }
        return WalletCardRecord(
            id: try row.int64("id"),
            source: source,
            scheme: CardV1.CardScheme(rawValue: try row.get("scheme")),
            panLast4: try row.text("pan_last4"),
            status: status,
            eligibilityReceipt: try row.text("eligibility_receipt"),
            receiptExpiresAtMs: UInt64(max(0, try row.int64("receipt_expires_at_ms"))),
            terms: try termsBytes.map { try CardV1.TermsAndConditions(serializedBytes: $0) },
            digitizeRequestID: try row.get("digitize_request_id"),
            termsAcceptedAtMs: accepted.map { UInt64(max(0, $0)) },
            result: try resultBytes.map { try TspV1.DigitizeResponse(serializedBytes: $0) },
            walletAccountID: try row.get("wallet_account_id", as: String?.self),
            issuerID: try row.get("issuer_id", as: String?.self),
            issuerNodeID: try row.get("issuer_node_id", as: String?.self),
            activationFailure: try row.get("activation_failure", as: String?.self))
    }

    func run<T>(_ action: String, _ body: () throws -> T) throws(WalletError) -> T {
        do {
            return try body()
        } catch let error as WalletError {
            throw error
        } catch {
            // A StorageError is kept as it is, so the status can tell a full disk (`WalletError.rpcError`).
            throw WalletError(
                .internal, "the wallet could not \(action)", cause: (error as? StorageError) ?? DescribedCause(error))
        }
    }
}

/// A non-Sendable cause kept by its description.
struct DescribedCause: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ error: any Error) { description = String(describing: error) }
}
