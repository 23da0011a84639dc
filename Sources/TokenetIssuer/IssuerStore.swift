import Foundation
import TokenetCard
import TokenetStorage

/// One of the issuer's cards, its number opened from the vault.
struct StoredCard: Sendable {
    var id: String
    var accountID: String
    var pan: PAN
    var expiry: CardExpiry
    var cvc: String
    var cardholderName: String
    var notEligibleReason: String?
    /// Set while the issuer's operator has the card blocked (lost, stolen): the block's reason.
    var blockedReason: String? = nil
    var rule: DigitizationRule
    var contact: CardholderContact
    /// The renewal reserved for the card and waiting for the TSP's answer, with when it was reserved; nil when none is.
    var pendingRenewal: (renewal: PendingRenewal, since: Date)? = nil
    /// The change of the card's tokens that went with its block or opening and waits for the TSP; nil when none does.
    var pendingTokenChange: PendingTokenChange? = nil
}

extension StoredCard {
    /// Why the issuer refuses anything for the card while it is blocked, or nil when it is open.
    var blockedRefusal: String? {
        blockedReason.map { "the card ending \(pan.last4) is blocked by the issuer (\($0))" }
    }
}

/// Who the issuer is, as the fixture declared it; kept so a restart without `--fixtures` can still register.
struct IssuerProfile: Sendable, Equatable {
    var id: String
    var name: String
    var binRanges: [IssuerFixture.BINRange]
    var callCenterNumber: String?
}

/// The issuer's SQLite database: profile, cardholders, accounts, cards (numbers and codes sealed with the
/// DataVault), every digitization decision with its inputs, and every push.
final class IssuerStore: Sendable {
    let database: Database
    let vault: DataVault
    /// What opening the database did to its schema (nil: it was up to date), for the node's log.
    let schemaChange: SchemaChange?

    static let migrations = [
        Migration(
            version: 1, name: "issuer",
            sql: """
                CREATE TABLE issuer_profile (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                    issuer_id TEXT NOT NULL, name TEXT NOT NULL, bin_ranges TEXT NOT NULL, call_center TEXT);
                CREATE TABLE cardholders (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, phone TEXT NOT NULL, email TEXT NOT NULL);
                CREATE TABLE accounts (
                    id TEXT PRIMARY KEY, cardholder_id TEXT NOT NULL REFERENCES cardholders(id));
                CREATE TABLE cards (
                    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
                    pan_sealed BLOB NOT NULL, last4 TEXT NOT NULL, scheme TEXT NOT NULL, expiry TEXT NOT NULL,
                    cvc_sealed BLOB NOT NULL, cardholder_name TEXT NOT NULL, not_eligible_reason TEXT,
                    rule TEXT NOT NULL);
                CREATE INDEX cards_by_last4 ON cards(last4);
                CREATE TABLE decisions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, decided_at TEXT NOT NULL,
                    card_id TEXT REFERENCES cards(id), last4 TEXT NOT NULL, digital_card_id TEXT NOT NULL,
                    token_last4 TEXT NOT NULL, wallet_account_id TEXT NOT NULL, input_method INTEGER NOT NULL,
                    device_id TEXT NOT NULL, device_type TEXT NOT NULL, account_score INTEGER NOT NULL,
                    device_score INTEGER NOT NULL, recommendation INTEGER NOT NULL, rule TEXT,
                    decision TEXT NOT NULL, reason TEXT NOT NULL, idv_methods TEXT NOT NULL);
                CREATE TABLE pushes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, pushed_at TEXT NOT NULL,
                    card_id TEXT NOT NULL REFERENCES cards(id), mode TEXT NOT NULL,
                    wallet_account_id TEXT NOT NULL, outcome TEXT NOT NULL);
                """),
        Migration(
            version: 2, name: "outbox",
            sql: """
                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, sent_at_ms INTEGER NOT NULL,
                    digital_card_id TEXT NOT NULL, channel TEXT NOT NULL, masked_destination TEXT NOT NULL,
                    text TEXT NOT NULL);
                CREATE INDEX outbox_by_token ON outbox(digital_card_id, id);
                """),
        Migration(version: 3, name: "strong-authentication", sql: IssuerStore.authenticationSchema),
        Migration(version: 4, name: "app-inbox", sql: IssuerStore.appInboxSchema),
        Migration(version: 5, name: "card-renewals", sql: IssuerStore.renewalSchema),
        // A known plaintext sealed with the vault key (`VaultKeyFile`): a start with another key is refused.
        Migration(
            version: 6, name: "vault-key-check",
            sql: """
                CREATE TABLE vault_key_check (
                    singleton INTEGER PRIMARY KEY CHECK (singleton = 1), sealed BLOB NOT NULL);
                """),
        Migration(version: 7, name: "pending-renewals", sql: IssuerStore.pendingRenewalSchema),
        Migration(version: 8, name: "pending-renewal-times", sql: IssuerStore.pendingRenewalTimeSchema),
        Migration(version: 9, name: "deleted-tokens", sql: IssuerStore.deletedTokensSchema),
        Migration(version: 10, name: "app-authn-requests", sql: IssuerStore.appAuthnRequestsSchema),
        Migration(version: 11, name: "drop-app-authn-answers", sql: IssuerStore.appAuthnAnswersDropSchema),
        Migration(version: 12, name: "enrolment-ends", sql: IssuerStore.enrolmentEndsSchema),
        Migration(version: 13, name: "outbox-ends", sql: IssuerStore.outboxEndsSchema),
        Migration(version: 14, name: "unknown-tokens", sql: IssuerStore.unknownTokensSchema),
        Migration(version: 15, name: "deleted-tokens-backfill", sql: IssuerStore.deletedTokensBackfillSchema),
        Migration(version: 16, name: "app-inbox-arrivals", sql: IssuerStore.appInboxArrivalSchema),
        Migration(version: 17, name: "previous-numbers", sql: IssuerStore.previousNumbersSchema),
        Migration(version: 18, name: "decision-indexes", sql: IssuerStore.decisionIndexesSchema),
        // The wallet node each token is digitized through (`AuthorizeDigitizationRequest.wallet_node_id`), which
        // alone may open the issuer app for it.
        Migration(
            version: 19, name: "decision-wallet-nodes", sql: "ALTER TABLE decisions ADD COLUMN wallet_node_id TEXT;"),
        Migration(version: 20, name: "app-authn-cards", sql: IssuerStore.appAuthnCardSchema),
        // The enrolment whose code activated each account in the app (`AppAccountRecord.referenceID`).
        Migration(
            version: 21, name: "app-account-references",
            sql: "ALTER TABLE app_accounts ADD COLUMN reference_id TEXT NOT NULL DEFAULT '';"),
        Migration(version: 22, name: "registered-tsp", sql: IssuerStore.registeredTSPSchema),
        // A card blocked by the issuer's operator (lost, stolen), kept apart from the fixture's columns, which a
        // reload of the fixture writes over.
        Migration(
            version: 23, name: "card-block",
            sql: """
                ALTER TABLE cards ADD COLUMN blocked_reason TEXT;
                ALTER TABLE cards ADD COLUMN blocked_at_ms INTEGER;
                """),
        // The token requestor and token type each digitization names (`AuthorizeDigitizationRequest`).
        Migration(
            version: 24, name: "decision-token-requestors",
            sql: """
                ALTER TABLE decisions ADD COLUMN token_requestor_id TEXT NOT NULL DEFAULT '';
                ALTER TABLE decisions ADD COLUMN token_type INTEGER NOT NULL DEFAULT 0;
                """),
        // The change of a card's tokens that goes with its block, kept until the TSP has answered it for each.
        Migration(version: 25, name: "pending-token-changes", sql: IssuerStore.pendingTokenChangeSchema),
        // The card's Payment Account Reference each digitization names (`AuthorizeDigitizationRequest`).
        Migration(
            version: 26, name: "decision-payment-account-references",
            sql: "ALTER TABLE decisions ADD COLUMN par TEXT NOT NULL DEFAULT '';"),
    ]

    init(database: Database, vault: DataVault) throws(IssuerError) {
        self.database = database
        self.vault = vault
        do {
            schemaChange = SchemaChange(
                applied: try Migrator(Self.migrations).migrate(database), among: Self.migrations)
        } catch {
            // A StorageError is kept as it is, so the node can tell a database it must not start on by its code.
            throw IssuerError(
                .storage, "cannot open the issuer database \(database.path ?? "")",
                cause: (error as? StorageError) ?? IssuerDescribedError(error))
        }
    }

    /// Opens (creating) `issuer.sqlite` in `directory`, with the vault key next to it; a key that cannot open the
    /// sealed data the database already holds is refused (`.keys`, caused by `CardError.vaultKeyMismatch`).
    static func open(directory: String) throws(IssuerError) -> IssuerStore {
        // A database that is not the issuer's is refused before a vault key is made beside it.
        do {
            try Migrator(Self.migrations).checkOwnership(ofFileAt: Self.path(in: directory))
        } catch let error as StorageError where error.code == .corrupt {
            throw damaged(Self.path(in: directory), error)
        } catch {
            throw IssuerError(
                .storage, "cannot open \(Self.path(in: directory))",
                cause: (error as? StorageError) ?? IssuerDescribedError(error))
        }
        let key: VaultKeyFile
        do {
            key = try VaultKeyFile(path: (directory as NSString).appendingPathComponent("issuer-vault.key"))
        } catch {
            throw IssuerError(.keys, "cannot load the issuer's vault key", cause: error)
        }
        let path = Self.path(in: directory)
        let store: IssuerStore
        do {
            store = try IssuerStore(database: try Database.open(path: path), vault: key.vault)
        } catch let error as IssuerError {
            // Damage found past the file's header (by the migrations' first read) was reported as a migration
            // that failed, without the file or what to do.
            guard let storage = error.cause as? StorageError, storage.code == .corrupt else { throw error }
            throw damaged(path, storage)
        } catch let error as StorageError where error.code == .corrupt {
            throw damaged(path, error)
        } catch let error as StorageError {
            // Kept as it is, so the node can tell a database it must not start on (read-only) by its code.
            throw IssuerError(.storage, "cannot open \(path)", cause: error)
        } catch {
            throw IssuerError(.storage, "cannot open \(path)", cause: IssuerDescribedError(error))
        }
        try store.verifyVaultKey(key, databasePath: path)
        return store
    }

    /// Where the issuer database of a data directory is.
    static func path(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("issuer.sqlite")
    }

    /// A database file SQLite finds damaged, or that is not a database: the operator's to restore.
    static func damaged(_ path: String, _ error: StorageError) -> IssuerError {
        IssuerError(
            .storage, "the issuer database \(path) is damaged: restore it from a backup, with its vault key",
            cause: error)
    }

    /// Checks `key` against the database's check value (or, for a database without one, a sealed card number) and
    /// stores the check value when there was none, in one transaction.
    func verifyVaultKey(_ key: VaultKeyFile, databasePath: String) throws(IssuerError) {
        do {
            try database.transaction { tx in
                let stored = try tx.storedVaultKeyCheck()
                let sample = try tx.queryOne("SELECT id, pan_sealed FROM cards LIMIT 1").map { row in
                    VaultKeyFile.SealedSample(
                        record: try row.blob(1), associatedData: Array("card:\(try row.text(0))".utf8))
                }
                if let check = try key.verify(storedCheck: stored, sample: sample, database: databasePath) {
                    _ = try tx.execute("INSERT INTO vault_key_check (singleton, sealed) VALUES (1, ?)", [check])
                }
            }
        } catch let error as CardError {
            throw IssuerError(.keys, "the issuer's vault key does not fit its database", cause: error)
        } catch let error as StorageError where error.code == .corrupt {
            // The check's read is the first past the tables the migrations look at (a damaged page of cards): it
            // said "cannot check the vault key", which points at the key, not at the file to restore.
            throw Self.damaged(databasePath, error)
        } catch let error as StorageError {
            throw IssuerError(.storage, "cannot check the vault key against \(databasePath)", cause: error)
        } catch {
            throw IssuerError(.storage, "cannot check the vault key", cause: IssuerDescribedError(error))
        }
    }

    /// Runs `body`, turning storage failures into `IssuerError`s that say what was being done.
    func storage<T>(_ doing: String, _ body: () throws -> T) throws(IssuerError) -> T {
        do {
            return try body()
        } catch let error as IssuerError {
            throw error
        } catch {
            // A StorageError is kept as it is, so the status can tell a full disk (`IssuerError.rpcError`).
            let cause: any Error & Sendable = (error as? StorageError) ?? IssuerDescribedError(error)
            throw IssuerError(.storage, "cannot \(doing)", cause: cause)
        }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
