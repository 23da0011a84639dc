import Foundation
import TokenetCard
import TokenetStorage

/// The issuer app's user: the PIN check and the sealed device PIN. It stays when every account is deleted, so the
/// PIN does too.
struct AppUserRecord: Sendable {
    var userID: String
    var salt: [UInt8]
    var pinCheck: [UInt8]
    var devicePIN: String
    /// Wrong PINs in a row; the app locks at `IssuerAppAuthenticator.maxPINFailures`.
    var pinFailures = 0
}

/// One activated account in the app, its two HOTP credentials sealed under the app's keys.
struct AppAccountRecord: Sendable {
    var userID: String
    var accountID: String
    var displayName: String
    var userCredentialID: String
    var userSecretSealed: [UInt8]
    var deviceCredentialID: String
    var deviceSecretSealed: [UInt8]
    var digits: Int
    var userCounter: UInt64
    var deviceCounter: UInt64
    var activatedAtMs: UInt64
    /// The enrolment whose code activated it (empty for accounts activated before this was kept): a retry of that
    /// code is ALREADY_USED because the app holds its credentials, a retry of any other because an activation whose
    /// answer was lost replaced them.
    var referenceID = ""
}

/// Storage for strong authentication at the issuer: the backend's enrolments (reference id → user and account; the
/// activation code itself only in the outbox), kept until `IssuerRetention` after their code expired, and the
/// app's users and accounts.
extension IssuerStore {
    /// When each enrolment can no longer be used (`IssuerRetention.enrolmentEndsAtMs`), so the ended ones are
    /// pruned through an index. Those recorded before knew no expiry: they end the longest code lifetime after they
    /// were made.
    static let enrolmentEndsSchema = """
        ALTER TABLE enrolments ADD COLUMN ends_at_ms INTEGER NOT NULL DEFAULT 0;
        UPDATE enrolments SET ends_at_ms = created_at_ms + \(IssuerRetention.longestActivationLifetimeMs);
        CREATE INDEX enrolments_by_end ON enrolments(ends_at_ms);
        """

    static let authenticationSchema = """
        CREATE TABLE enrolments (
            reference_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES cardholders(id),
            account_id TEXT NOT NULL REFERENCES accounts(id), created_at_ms INTEGER NOT NULL);
        CREATE TABLE app_users (
            user_id TEXT PRIMARY KEY, salt BLOB NOT NULL, pin_check BLOB NOT NULL, device_pin_sealed BLOB NOT NULL,
            pin_failures INTEGER NOT NULL DEFAULT 0, created_at_ms INTEGER NOT NULL);
        CREATE TABLE app_accounts (
            user_id TEXT NOT NULL REFERENCES app_users(user_id), account_id TEXT NOT NULL,
            display_name TEXT NOT NULL, user_credential_id TEXT NOT NULL, user_secret_sealed BLOB NOT NULL,
            device_credential_id TEXT NOT NULL, device_secret_sealed BLOB NOT NULL, digits INTEGER NOT NULL,
            user_counter INTEGER NOT NULL, device_counter INTEGER NOT NULL, activated_at_ms INTEGER NOT NULL,
            PRIMARY KEY (user_id, account_id));
        """

    // MARK: Backend

    /// The cardholder's accounts, in id order; nil when there is no such cardholder.
    func accounts(ofCardholder userID: String) throws(IssuerError) -> [String]? {
        try storage("list a cardholder's accounts") {
            guard try database.queryOne("SELECT 1 FROM cardholders WHERE id = ?", [userID]) != nil else { return nil }
            return try database.query("SELECT id FROM accounts WHERE cardholder_id = ? ORDER BY id", [userID]).map {
                try $0.text(0)
            }
        }
    }

    func cardholderPhone(_ userID: String) throws(IssuerError) -> String? {
        try storage("read a cardholder") {
            try database.queryOne("SELECT phone FROM cardholders WHERE id = ?", [userID]).map { try $0.text(0) }
        }
    }

    /// Records an enrolment made at `nowMs` whose activation code expires at `expiresAtMs` (0: unknown).
    func recordEnrolment(
        referenceID: String, userID: String, accountID: String, expiresAtMs: UInt64, nowMs: UInt64
    ) throws(IssuerError) {
        let endsAtMs = IssuerRetention.enrolmentEndsAtMs(expiresAtMs: expiresAtMs, createdAtMs: nowMs)
        _ = try storage("record an enrolment") {
            try database.execute(
                """
                INSERT INTO enrolments (reference_id, user_id, account_id, created_at_ms, ends_at_ms)
                VALUES (?, ?, ?, ?, ?)
                """,
                [referenceID, userID, accountID, Int64(clamping: nowMs), Int64(clamping: endsAtMs)])
        }
    }

    /// Deletes the enrolments that could no longer be used at or before `cutoffMs` (`ends_at_ms`); returns how many.
    @discardableResult
    func pruneEnrolments(endedAtOrBefore cutoffMs: UInt64) throws(IssuerError) -> Int {
        try storage("prune the enrolments") {
            try database.execute("DELETE FROM enrolments WHERE ends_at_ms <= ?", [Int64(clamping: cutoffMs)]).changes
        }
    }

    func enrolment(referenceID: String) throws(IssuerError) -> (userID: String, accountID: String, createdAtMs: UInt64)?
    {
        try storage("look up an enrolment") {
            try database.queryOne(
                "SELECT user_id, account_id, created_at_ms FROM enrolments WHERE reference_id = ?", [referenceID]
            ).map { (try $0.text(0), try $0.text(1), UInt64(try $0.int64(2))) }
        }
    }

    /// Whether the same account was enrolled again after `referenceID` (by `enroll`, or `activate-linked`), whose
    /// code then replaced this one's.
    func hasNewerEnrolment(than referenceID: String) throws(IssuerError) -> Bool {
        try storage("look up the account's enrolments") {
            try database.queryOne(
                """
                SELECT 1 FROM enrolments AS later JOIN enrolments AS this ON this.reference_id = ?
                WHERE later.user_id = this.user_id AND later.account_id = this.account_id AND later.rowid > this.rowid
                LIMIT 1
                """, [referenceID]) != nil
        }
    }

    /// Whether the enrolment `referenceID` was made after `other` (nil when either is no longer kept).
    func enrolment(_ referenceID: String, isNewerThan other: String) throws(IssuerError) -> Bool? {
        try storage("compare two enrolments") {
            try database.queryOne(
                """
                SELECT this.rowid > other.rowid FROM enrolments AS this JOIN enrolments AS other
                ON this.reference_id = ? AND other.reference_id = ?
                """, [referenceID, other]
            ).map { try $0.int64(0) != 0 }
        }
    }

    // MARK: App

    func appUser(_ userID: String) throws(IssuerError) -> AppUserRecord? {
        let row = try storage("read the app's user") {
            try database.queryOne(
                "SELECT salt, pin_check, device_pin_sealed, pin_failures FROM app_users WHERE user_id = ?", [userID]
            ).map { (try $0.blob(0), try $0.blob(1), try $0.blob(2), Int(try $0.int64(3))) }
        }
        guard let (salt, pinCheck, sealed, failures) = row else { return nil }
        let devicePIN: [UInt8]
        do {
            devicePIN = try vault.open(sealed, associatedData: Array("device-pin:\(userID)".utf8))
        } catch {
            throw IssuerError(.keys, "cannot open the app's device PIN", cause: error)
        }
        return AppUserRecord(
            userID: userID, salt: salt, pinCheck: pinCheck, devicePIN: String(decoding: devicePIN, as: UTF8.self),
            pinFailures: failures)
    }

    func insertAppUser(_ user: AppUserRecord, nowMs: UInt64) throws(IssuerError) {
        try saveActivation([], newUser: user, nowMs: nowMs)
    }

    /// The accounts an activation gave credentials to, and the app's user when the activation makes it (its PIN),
    /// in one write: written apart, a failure between them left a PIN set and no account, with the credentials live
    /// at the TSP and the code spent; and in a bulk, the accounts after one that failed were lost.
    func saveActivation(_ accounts: [AppAccountRecord], newUser: AppUserRecord?, nowMs: UInt64) throws(IssuerError) {
        let user = try newUser.map { user throws(IssuerError) in try appUserParameters(user, nowMs: nowMs) }
        try storage("record an activated account") {
            try database.transaction { tx in
                if let user { _ = try tx.execute(Self.appUserInsert, user) }
                for account in accounts { _ = try tx.execute(Self.appAccountUpsert, Self.parameters(of: account)) }
            }
        }
    }

    private static let appUserInsert = """
        INSERT INTO app_users (user_id, salt, pin_check, device_pin_sealed, created_at_ms) VALUES (?, ?, ?, ?, ?)
        """

    private func appUserParameters(_ user: AppUserRecord, nowMs: UInt64) throws(IssuerError)
        -> [any SQLValueConvertible]
    {
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(Array(user.devicePIN.utf8), associatedData: Array("device-pin:\(user.userID)".utf8))
        } catch {
            throw IssuerError(.keys, "cannot seal the app's device PIN", cause: error)
        }
        return [user.userID, user.salt, user.pinCheck, sealed, Int64(nowMs)]
    }

    /// Counts a wrong PIN (`wrong`) or clears the count after a right one or an unlock; returns the new count.
    @discardableResult
    func recordPIN(userID: String, wrong: Bool) throws(IssuerError) -> Int {
        try storage("record a PIN attempt") {
            try database.transaction { tx in
                _ = try tx.execute(
                    "UPDATE app_users SET pin_failures = \(wrong ? "pin_failures + 1" : "0") WHERE user_id = ?",
                    [userID])
                return Int(
                    try tx.queryOne("SELECT pin_failures FROM app_users WHERE user_id = ?", [userID])?.int64(0) ?? 0)
            }
        }
    }

    /// Stores an activated account, replacing an earlier activation of the same account.
    func saveAppAccount(_ account: AppAccountRecord) throws(IssuerError) {
        try saveActivation([account], newUser: nil, nowMs: account.activatedAtMs)
    }

    private static let appAccountUpsert = """
        INSERT OR REPLACE INTO app_accounts (user_id, account_id, display_name, user_credential_id,
            user_secret_sealed, device_credential_id, device_secret_sealed, digits, user_counter,
            device_counter, activated_at_ms, reference_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    private static func parameters(of account: AppAccountRecord) -> [any SQLValueConvertible] {
        [
            account.userID, account.accountID, account.displayName, account.userCredentialID,
            account.userSecretSealed, account.deviceCredentialID, account.deviceSecretSealed, account.digits,
            Int64(account.userCounter), Int64(account.deviceCounter), Int64(account.activatedAtMs),
            account.referenceID,
        ]
    }

    /// The user's activated accounts, oldest first.
    func appAccounts(_ userID: String) throws(IssuerError) -> [AppAccountRecord] {
        try storage("list the app's accounts") {
            try database.query(
                """
                SELECT account_id, display_name, user_credential_id, user_secret_sealed, device_credential_id,
                    device_secret_sealed, digits, user_counter, device_counter, activated_at_ms, reference_id
                FROM app_accounts WHERE user_id = ? ORDER BY activated_at_ms, account_id
                """, [userID]
            ).map { row in
                AppAccountRecord(
                    userID: userID, accountID: try row.text(0), displayName: try row.text(1),
                    userCredentialID: try row.text(2), userSecretSealed: try row.blob(3),
                    deviceCredentialID: try row.text(4), deviceSecretSealed: try row.blob(5),
                    digits: Int(try row.int64(6)), userCounter: UInt64(try row.int64(7)),
                    deviceCounter: UInt64(try row.int64(8)), activatedAtMs: UInt64(try row.int64(9)),
                    referenceID: try row.text(10))
            }
        }
    }

    /// Takes the next counter of both credentials: stored advanced before any code leaves the app, so a counter is
    /// never used twice even if the login fails on the way.
    func takeCounters(userID: String, accountID: String) throws(IssuerError) -> (user: UInt64, device: UInt64) {
        try storage("advance the app's counters") {
            try database.transaction { tx in
                guard
                    let row = try tx.queryOne(
                        "SELECT user_counter, device_counter FROM app_accounts WHERE user_id = ? AND account_id = ?",
                        [userID, accountID])
                else { throw IssuerError(.notFound, "account \(accountID) is not activated in the app") }
                _ = try tx.execute(
                    """
                    UPDATE app_accounts SET user_counter = user_counter + 1, device_counter = device_counter + 1
                    WHERE user_id = ? AND account_id = ?
                    """, [userID, accountID])
                return (UInt64(try row.int64(0)), UInt64(try row.int64(1)))
            }
        }
    }

    /// Sets an account's counters back to `taken` when they stand `steps` past it, as the codes taken from there
    /// left them: for codes that never reached the TSP. Counters moved since (which logins taking turns rule out)
    /// are left as they are.
    func giveBackCounters(
        of account: AppAccountRecord, to taken: (user: UInt64, device: UInt64), ifAdvancedBy steps: UInt64
    ) throws(IssuerError) {
        try storage("give back the app's counters") {
            // Only to the same credentials: an activation that replaced the account meanwhile brought its own.
            _ = try database.execute(
                """
                UPDATE app_accounts SET user_counter = ?, device_counter = ?
                WHERE user_id = ? AND account_id = ? AND user_credential_id = ? AND device_credential_id = ?
                    AND user_counter = ? AND device_counter = ?
                """,
                [
                    Int64(taken.user), Int64(taken.device), account.userID, account.accountID,
                    account.userCredentialID, account.deviceCredentialID, Int64(taken.user + steps),
                    Int64(taken.device + steps),
                ])
        }
    }

    /// Deletes an account from the app, as long as it still holds `account`'s credentials (the ones the TSP
    /// revoked); returns how many accounts are left (the user and PIN stay).
    func deleteAppAccount(_ account: AppAccountRecord) throws(IssuerError) -> Int {
        let (userID, accountID) = (account.userID, account.accountID)
        return try storage("delete an account from the app") {
            try database.transaction { tx in
                let deleted = try tx.execute(
                    """
                    DELETE FROM app_accounts
                    WHERE user_id = ? AND account_id = ? AND user_credential_id = ? AND device_credential_id = ?
                    """, [userID, accountID, account.userCredentialID, account.deviceCredentialID])
                if deleted.changes == 0 {
                    let stillThere = try tx.queryOne(
                        "SELECT 1 FROM app_accounts WHERE user_id = ? AND account_id = ?", [userID, accountID])
                    guard stillThere == nil else {
                        throw IssuerError(
                            .failedPrecondition,
                            "account \(accountID) was activated again while it was being removed; its new "
                                + "credentials stay in the app: remove it again to revoke them too")
                    }
                    throw IssuerError(.notFound, "account \(accountID) is not activated in \(userID)'s app")
                }
                return Int(
                    try tx.queryOne("SELECT COUNT(*) FROM app_accounts WHERE user_id = ?", [userID])?.int64(0) ?? 0)
            }
        }
    }
}
