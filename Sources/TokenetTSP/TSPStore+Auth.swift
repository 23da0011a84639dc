import Foundation
import TokenetCard
import TokenetStorage

/// A provisioned HOTP credential, as handed to the issuer app once (its secret is stored only sealed).
struct ProvisionedCredential: Sendable, Equatable {
    var id: String
    var secret: [UInt8]
    var digits: Int
    var counter: UInt64
}

/// The answer to an activation attempt.
enum ActivationAnswer: Sendable, Equatable {
    case unknownReference
    case activated(userID: String, accountID: String, user: ProvisionedCredential, device: ProvisionedCredential)
    case refused(userID: String, accountID: String, ActivationCodeStateMachine.Outcome)
}

/// The answer to a login: both credentials accepted, or the first one that was not.
enum LoginAnswer: Sendable, Equatable {
    case accepted(userID: String, accountID: String, deviceID: String)
    /// The first credential refused (the user's, when both were), and the device credential when it was refused
    /// too: its failure counts as well, and the answer named the user credential alone, so "failures left" and
    /// the lock read as if only one credential were failing.
    case refused(credentialID: String, HOTPVerifierStateMachine.Outcome, alsoRefused: CredentialRefusal? = nil)
}

/// One credential's refusal in a login (`LoginAnswer.refused`).
struct CredentialRefusal: Sendable, Equatable {
    let credentialID: String
    let outcome: HOTPVerifierStateMachine.Outcome
}

/// Strong-authentication storage: enrolments (activation codes as digests) and HOTP credentials (secrets sealed
/// with the DataVault, bound to their credential id). Each check runs its state machine and persists the new state
/// in the same transaction, before the caller answers: a code is never accepted twice, also across a restart.
extension TSPStore {
    /// An activation code as stored: keyed with the vault, as a one-time code is (`OTPCode.digest`), so that a copy of
    /// the database does not give the code away. Unkeyed, its reference id beside it, a code's 49 bits could be
    /// searched for within its hour, and the code exchanged for the account's credentials.
    func activationDigest(referenceID: String, code: String) throws -> [UInt8] {
        try vault.digest(
            Array("\(referenceID):\(ActivationCode.normalized(code))".utf8), purpose: "activation-code-v2")
    }

    /// The unkeyed form codes were stored in before: a code issued then and still valid (for its hour across an
    /// upgrade) is checked against it.
    static func legacyActivationDigest(referenceID: String, code: String) throws -> [UInt8] {
        try SHA256.hash(Array("activation-code:\(referenceID):\(ActivationCode.normalized(code))".utf8))
    }

    /// Registers the enrolment of each account (`accountID`, with its reference id and code) in one transaction:
    /// one refused (another user came to hold it) registers none, where the accounts before it had their pending
    /// codes replaced by ones the refused call never gave the issuer.
    func registerEnrolments(
        issuerID: String, userID: String, _ enrolments: [(accountID: String, referenceID: String, code: String)],
        expiresAtMs: UInt64, attempts: Int, nowMs: UInt64
    ) throws {
        let digests = try enrolments.map { try activationDigest(referenceID: $0.referenceID, code: $0.code) }
        try database.transaction { tx in
            for (enrolment, digest) in zip(enrolments, digests) {
                try register(
                    tx, issuerID: issuerID, userID: userID, accountID: enrolment.accountID,
                    referenceID: enrolment.referenceID, digest: digest, expiresAtMs: expiresAtMs, attempts: attempts,
                    nowMs: nowMs)
            }
        }
    }

    private func register(
        _ tx: Transaction, issuerID: String, userID: String, accountID: String, referenceID: String, digest: [UInt8],
        expiresAtMs: UInt64, attempts: Int, nowMs: UInt64
    ) throws {
        // Checked again here, in the transaction that registers: an activation of another user's pending code
        // between the service's check and this one would otherwise leave two owners.
        if let holder = try tx.queryOne(
            Self.otherHolderQuery,
            [issuerID, accountID, userID])
        {
            throw TSPError.accountHeld(accountID, by: try holder.text(0), for: userID)
        }
        _ = try tx.execute(
            """
            UPDATE auth_enrolments SET status = 'superseded', updated_at_ms = ?
            WHERE issuer_id = ? AND account_id = ? AND status = 'pending'
            """, [Int64(nowMs), issuerID, accountID])
        _ = try tx.execute(
            """
            INSERT INTO auth_enrolments (reference_id, issuer_id, user_id, account_id, code_digest, expires_at_ms,
                attempts_left, status, created_at_ms, updated_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)
            """,
            [
                referenceID, issuerID, userID, accountID, digest, Int64(expiresAtMs), attempts, Int64(nowMs),
                Int64(nowMs),
            ])
    }

    /// Checks an activation code; on success replaces the account's credentials with `user` and `device`.
    func verifyActivation(
        issuerID: String, referenceID: String, code: String, displayName: String, user: ProvisionedCredential,
        device: ProvisionedCredential, nowMs: UInt64
    ) throws -> ActivationAnswer {
        let digest = try activationDigest(referenceID: referenceID, code: code)
        let legacy = try Self.legacyActivationDigest(referenceID: referenceID, code: code)
        return try database.transaction { tx in
            guard
                let row = try tx.queryOne(
                    """
                    SELECT user_id, account_id, code_digest, expires_at_ms, attempts_left, status
                    FROM auth_enrolments WHERE reference_id = ? AND issuer_id = ?
                    """, [referenceID, issuerID])
            else { return .unknownReference }
            let userID = try row.text(0)
            let accountID = try row.text(1)
            guard let status = ActivationCodeStateMachine.Status(rawValue: try row.text(5)) else {
                throw TSPError(.internal, "enrolment \(referenceID) has an unknown status")
            }
            var machine = ActivationCodeStateMachine(
                state: .init(
                    status: status, attemptsLeft: Int(try row.int64(4)), expiresAtMs: UInt64(try row.int64(3))))
            let stored = try row.blob(2)
            let matches = HMAC.constantTimeEquals(stored, digest) || HMAC.constantTimeEquals(stored, legacy)
            var answer = ActivationAnswer.refused(userID: userID, accountID: accountID, .expired)
            for action in machine.codeSubmitted(matches: matches, nowMs: nowMs) {
                switch action {
                case .persist(let state):
                    _ = try tx.execute(
                        """
                        UPDATE auth_enrolments SET status = ?, attempts_left = ?, updated_at_ms = ?
                        WHERE reference_id = ?
                        """, [state.status.rawValue, state.attemptsLeft, Int64(nowMs), referenceID])
                case .answer(.activate):
                    _ = try tx.execute(
                        "DELETE FROM auth_credentials WHERE issuer_id = ? AND user_id = ? AND account_id = ?",
                        [issuerID, userID, accountID])
                    for (credential, kind) in [(user, "user"), (device, "device")] {
                        _ = try tx.execute(
                            """
                            INSERT INTO auth_credentials (id, issuer_id, user_id, account_id, kind, pair_id,
                                secret_sealed, digits, counter, failures, locked, display_name, created_at_ms,
                                updated_at_ms)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?)
                            """,
                            [
                                credential.id, issuerID, userID, accountID, kind, referenceID,
                                try sealSecret(credential.secret, credentialID: credential.id), credential.digits,
                                Int64(credential.counter), displayName, Int64(nowMs), Int64(nowMs),
                            ])
                    }
                    answer = .activated(userID: userID, accountID: accountID, user: user, device: device)
                case .answer(let outcome):
                    answer = .refused(userID: userID, accountID: accountID, outcome)
                }
            }
            return answer
        }
    }

    /// Checks a login's two codes; both credentials must be the same enrolment's (user and device) and the
    /// issuer's.
    func login(
        issuerID: String, userCredentialID: String, userCode: String, deviceCredentialID: String,
        deviceCode: String, policy: HOTPVerifierStateMachine.Policy, nowMs: UInt64
    ) throws -> LoginAnswer {
        try database.transaction { tx in
            let user = try credential(userCredentialID, issuerID: issuerID, kind: "user", tx)
            let device = try credential(deviceCredentialID, issuerID: issuerID, kind: "device", tx)
            guard user.pairID == device.pairID else {
                throw TSPError(
                    .invalidArgument,
                    "credentials \(userCredentialID) and \(deviceCredentialID) were not provisioned together")
            }
            let userOutcome = try check(user, code: userCode, policy: policy, nowMs: nowMs, tx)
            let deviceOutcome = try check(device, code: deviceCode, policy: policy, nowMs: nowMs, tx)
            if userOutcome != .accepted {
                let device =
                    deviceOutcome == .accepted
                    ? nil : CredentialRefusal(credentialID: device.id, outcome: deviceOutcome)
                return .refused(credentialID: user.id, userOutcome, alsoRefused: device)
            }
            if deviceOutcome != .accepted { return .refused(credentialID: device.id, deviceOutcome) }
            return .accepted(userID: user.userID, accountID: user.accountID, deviceID: device.id)
        }
    }

    func resync(
        issuerID: String, credentialID: String, first: String, second: String,
        policy: HOTPVerifierStateMachine.Policy, nowMs: UInt64
    ) throws -> HOTPVerifierStateMachine.Outcome {
        try database.transaction { tx in
            let record = try credential(credentialID, issuerID: issuerID, kind: nil, tx)
            var machine = HOTPVerifierStateMachine(state: record.state, policy: policy)
            let hotp = try HOTP(secret: record.secret, digits: record.digits)
            let actions = try machine.resyncSubmitted(first: first, second: second) { counter throws(CardError) in
                try hotp.code(counter: counter)
            }
            return try apply(actions, to: record.id, nowMs: nowMs, tx)
        }
    }

    /// Unlocks the user's credentials (one account's, or all); returns how many were locked.
    func unlockCredentials(issuerID: String, userID: String, accountID: String?, nowMs: UInt64) throws -> Int {
        try database.transaction { tx in
            var sql = "SELECT id, counter, failures, locked FROM auth_credentials WHERE issuer_id = ? AND user_id = ?"
            var parameters: [any SQLValueConvertible] = [issuerID, userID]
            if let accountID {
                sql += " AND account_id = ?"
                parameters.append(accountID)
            }
            var unlocked = 0
            for row in try tx.query(sql, parameters) {
                var machine = HOTPVerifierStateMachine(
                    state: .init(
                        counter: UInt64(try row.int64(1)), failures: Int(try row.int64(2)),
                        locked: try row.int64(3) != 0))
                if try apply(machine.unlocked(), to: try row.text(0), nowMs: nowMs, tx) == .accepted {
                    unlocked += 1
                }
            }
            return unlocked
        }
    }

    /// Removes the issuer's pair of credentials with these ids; returns how many there were (0 when both are gone:
    /// a retry after a lost answer). A locked credential is refused (FAILED_PRECONDITION): removed, its account could
    /// be activated again in the app with fresh credentials, and the lock, which stands until the issuer lifts it,
    /// would be gone without the issuer. Two ids that are not one account's pair are refused (INVALID_ARGUMENT) and
    /// nothing is removed: the user credential of one account and the device credential of another each took half
    /// of two pairs, and left both accounts unable to log in or to be enrolled for anyone else.
    func removeCredentials(issuerID: String, user: String, device: String) throws -> Int {
        try database.transaction { tx in
            let held = try [(user, "user"), (device, "device")].compactMap { id, kind in
                try tx.queryOne(
                    "SELECT kind, pair_id, account_id FROM auth_credentials WHERE id = ? AND issuer_id = ?",
                    [id, issuerID]
                ).map { row in
                    (id: id, expected: kind, kind: try row.text(0), pair: try row.text(1), account: try row.text(2))
                }
            }
            for credential in held where credential.kind != credential.expected {
                throw TSPError(
                    .invalidArgument,
                    "\(credential.id) is a \(credential.kind) credential, given as the \(credential.expected) "
                        + "credential; nothing was removed")
            }
            if held.count == 2, held[0].pair != held[1].pair {
                throw TSPError(
                    .invalidArgument,
                    "\(user) and \(device) are not one account's credentials (the user credential is account "
                        + "\(held[0].account)'s, the device credential account \(held[1].account)'s); nothing was "
                        + "removed: give the two credentials of the account to remove")
            }
            if held.count == 1 {
                let missing = held[0].expected == "user" ? device : user
                throw TSPError(
                    .invalidArgument,
                    "\(missing) is not one of this issuer's credentials, and \(held[0].id) is account "
                        + "\(held[0].account)'s: give the two credentials of the account to remove; nothing was "
                        + "removed")
            }
            let ids = [user, device]
            for id in Set(ids) {
                if let row = try tx.queryOne(
                    "SELECT account_id FROM auth_credentials WHERE id = ? AND issuer_id = ? AND locked != 0",
                    [id, issuerID])
                {
                    throw TSPError(
                        .failedPrecondition,
                        "the credentials of account \(try row.text(0)) are locked after too many wrong codes: the "
                            + "issuer unlocks them (tokenet issuer unlock) before the account can be removed")
                }
            }
            var removed = 0
            for id in Set(ids) {
                removed += Int(
                    try tx.execute("DELETE FROM auth_credentials WHERE id = ? AND issuer_id = ?", [id, issuerID])
                        .changes)
            }
            return removed
        }
    }

    /// Whether the issuer still holds this credential: an access token is good only while the device credential it
    /// was signed in with exists.
    func hasCredential(_ id: String, issuerID: String) throws -> Bool {
        try database.queryOne("SELECT 1 FROM auth_credentials WHERE id = ? AND issuer_id = ?", [id, issuerID]) != nil
    }

    /// Whether the user holds credentials for the account, locked or not.
    func holdsCredentials(issuerID: String, userID: String, accountID: String) throws -> Bool {
        try database.queryOne(
            "SELECT 1 FROM auth_credentials WHERE issuer_id = ? AND user_id = ? AND account_id = ? LIMIT 1",
            [issuerID, userID, accountID]) != nil
    }

    func hasActivatedAccount(issuerID: String, userID: String, accountID: String) throws -> Bool {
        try database.queryOne(
            """
            SELECT 1 FROM auth_credentials c
            WHERE c.issuer_id = ? AND c.user_id = ? AND c.account_id = ? AND c.kind = 'user' AND NOT EXISTS (
                SELECT 1 FROM auth_credentials l
                WHERE l.issuer_id = c.issuer_id AND l.user_id = c.user_id AND l.account_id = c.account_id
                    AND l.locked != 0)
            """, [issuerID, userID, accountID]) != nil
    }

    /// The user other than the one given who holds credentials for an issuer's account (parameters: issuer id,
    /// account id, user id): one query for the service's check and the registering transaction's.
    static let otherHolderQuery =
        "SELECT user_id FROM auth_credentials WHERE issuer_id = ? AND account_id = ? AND user_id <> ? LIMIT 1"

    /// Another user of the issuer who holds credentials for `accountID` (nil when none does): an account has one
    /// owner, whom in-app ID&V checks against.
    func otherHolder(issuerID: String, accountID: String, than userID: String) throws -> String? {
        try database.queryOne(
            Self.otherHolderQuery,
            [issuerID, accountID, userID]
        ).map { try $0.text(0) }
    }

    /// A credential's state as stored, for tests and operators.
    func credentialState(_ id: String) throws -> HOTPVerifierStateMachine.State? {
        try database.queryOne("SELECT counter, failures, locked FROM auth_credentials WHERE id = ?", [id]).map {
            .init(counter: UInt64(try $0.int64(0)), failures: Int(try $0.int64(1)), locked: try $0.int64(2) != 0)
        }
    }

    // MARK: Helpers

    private struct CredentialRecord {
        var id: String
        var userID: String
        var accountID: String
        var pairID: String
        var secret: [UInt8]
        var digits: Int
        var state: HOTPVerifierStateMachine.State
    }

    private func sealSecret(_ secret: [UInt8], credentialID: String) throws -> [UInt8] {
        try vault.seal(secret, associatedData: Array("hotp-credential:\(credentialID)".utf8))
    }

    private func credential(_ id: String, issuerID: String, kind: String?, _ tx: Transaction) throws
        -> CredentialRecord
    {
        guard
            let row = try tx.queryOne(
                """
                SELECT user_id, account_id, pair_id, secret_sealed, digits, counter, failures, locked, kind
                FROM auth_credentials WHERE id = ? AND issuer_id = ?
                """, [id, issuerID])
        else {
            throw TSPError(
                .notFound, "no credential of this issuer has id \"\(id)\"; activate the account again")
        }
        if let kind, try row.text(8) != kind {
            throw TSPError(.invalidArgument, "credential \"\(id)\" is not a \(kind) credential")
        }
        let secret = try vault.open(try row.blob(3), associatedData: Array("hotp-credential:\(id)".utf8))
        return CredentialRecord(
            id: id, userID: try row.text(0), accountID: try row.text(1), pairID: try row.text(2), secret: secret,
            digits: Int(try row.int64(4)),
            state: .init(
                counter: UInt64(try row.int64(5)), failures: Int(try row.int64(6)), locked: try row.int64(7) != 0))
    }

    private func check(
        _ record: CredentialRecord, code: String, policy: HOTPVerifierStateMachine.Policy, nowMs: UInt64,
        _ tx: Transaction
    ) throws -> HOTPVerifierStateMachine.Outcome {
        var machine = HOTPVerifierStateMachine(state: record.state, policy: policy)
        let hotp = try HOTP(secret: record.secret, digits: record.digits)
        let actions = try machine.codeSubmitted(code) { counter throws(CardError) in try hotp.code(counter: counter) }
        return try apply(actions, to: record.id, nowMs: nowMs, tx)
    }

    private func apply(
        _ actions: [HOTPVerifierStateMachine.Action], to id: String, nowMs: UInt64, _ tx: Transaction
    ) throws -> HOTPVerifierStateMachine.Outcome {
        var outcome = HOTPVerifierStateMachine.Outcome.notLocked
        for action in actions {
            switch action {
            case .persist(let state):
                _ = try tx.execute(
                    "UPDATE auth_credentials SET counter = ?, failures = ?, locked = ?, updated_at_ms = ? WHERE id = ?",
                    [Int64(state.counter), state.failures, state.locked ? 1 : 0, Int64(nowMs), id])
            case .answer(let answer):
                outcome = answer
            }
        }
        return outcome
    }
}
