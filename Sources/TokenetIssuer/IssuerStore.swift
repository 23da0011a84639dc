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
    var rule: DigitizationRule
    var contact: CardholderContact
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
    ]

    init(database: Database, vault: DataVault) throws(IssuerError) {
        self.database = database
        self.vault = vault
        do {
            _ = try Migrator(Self.migrations).migrate(database)
        } catch {
            throw IssuerError(.storage, "cannot migrate the issuer database", cause: IssuerDescribedError(error))
        }
    }

    /// Opens (creating) `issuer.sqlite` in `directory`, with the vault key next to it.
    static func open(directory: String) throws(IssuerError) -> IssuerStore {
        let vault: DataVault
        do {
            vault = try DataVault(keyFile: (directory as NSString).appendingPathComponent("issuer-vault.key"))
        } catch {
            throw IssuerError(.keys, "cannot load the issuer's vault key", cause: error)
        }
        let path = (directory as NSString).appendingPathComponent("issuer.sqlite")
        do {
            return try IssuerStore(database: try Database.open(path: path), vault: vault)
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(.storage, "cannot open \(path)", cause: IssuerDescribedError(error))
        }
    }

    /// Runs `body`, turning storage failures into `IssuerError`s that say what was being done.
    func storage<T>(_ doing: String, _ body: () throws -> T) throws(IssuerError) -> T {
        do {
            return try body()
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(.storage, "cannot \(doing)", cause: IssuerDescribedError(error))
        }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
