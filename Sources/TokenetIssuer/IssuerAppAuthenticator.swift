import Foundation
import Synchronization
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// The issuer app's strong authentication, one simulated installation per cardholder: it activates accounts into
/// the two HOTP credentials the TSP provisions, keeps them sealed under keys derived from the user's PIN and a random
/// device PIN, and logs in with a code from each. It is the issuer's `CardholderLogin`.
///
/// The PIN is set with the first account, is the same for every account and stays when every account is deleted;
/// every later activation and every login needs it. Secrets and PINs are never logged.
final class IssuerAppAuthenticator: CardholderLogin, Sendable {
    let store: IssuerStore
    let backend: IssuerEnrolmentBackend
    let logger: Logger
    let now: @Sendable () -> Date
    /// PBKDF2 iterations for the app's keys; tests lower it.
    let iterations: Int
    /// Logins, one of a user at a time (`login`).
    let loginTurns = KeyedTurns<String>()
    /// Activations, one of a user at a time (`activate`, `activateLinked`): a retry of a code whose first try is
    /// still under way (a client that gave up waiting) read the account before the first saved its credentials, and
    /// took the first's ALREADY_USED for a lost activation.
    let activationTurns = KeyedTurns<String>()
    /// A lock per user for its PIN checks (`keys`); as many as the issuer has users.
    private let pinLocks = Mutex<[String: NSLock]>([:])
    /// Wrong PINs in a row that lock the app until the issuer unlocks it (`IssuerEnrolment.UnlockCredentials`).
    static let maxPINFailures = 5

    init(
        store: IssuerStore, backend: IssuerEnrolmentBackend, logger: Logger, iterations: Int = 100_000,
        now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.backend = backend
        self.logger = logger
        self.iterations = iterations
        self.now = now
    }

    var nowMs: UInt64 { UInt64(max(0, now().timeIntervalSince1970 * 1000)) }

    // MARK: PIN

    /// The app's keys for a user who has a PIN, checking the PIN; nil for a user who has none yet (the PIN is then
    /// checked against the policy, to be set by the first activation).
    func keys(userID: String, pin: String) throws(IssuerError) -> (AppUserRecord, IssuerAppKeys)? {
        // One PIN check of a user at a time, from the count read to the count written: guesses made at once were
        // each checked against the count before any of them (6 of 20, past the limit of 5).
        let lock = pinLocks.withLock { locks in
            if let lock = locks[userID] { return lock }
            let lock = NSLock()
            locks[userID] = lock
            return lock
        }
        lock.lock()
        defer { lock.unlock() }
        return try checkedKeys(userID: userID, pin: pin)
    }

    private func checkedKeys(userID: String, pin: String) throws(IssuerError) -> (AppUserRecord, IssuerAppKeys)? {
        guard let user = try store.appUser(userID) else {
            guard !pin.isEmpty else {
                throw IssuerError(.invalidArgument, "this is the first account of the app: set a PIN (4 to 8 digits)")
            }
            try PINPolicy.check(pin)
            return nil
        }
        guard user.pinFailures < Self.maxPINFailures else {
            throw IssuerError(
                .locked,
                "the app is locked after \(Self.maxPINFailures) wrong PINs; the issuer unlocks it "
                    + "(tokenet issuer unlock ADDR \(userID))")
        }
        guard !pin.isEmpty else {
            throw IssuerError(.unauthenticated, "enter the app's PIN (the one set with the first account)")
        }
        do {
            try PINPolicy.checkForm(pin)
        } catch {
            throw IssuerError(.invalidArgument, "\(error.message), so it is not the app's PIN; no try was used")
        }
        let keys = try IssuerAppKeys.derive(
            pin: pin, devicePIN: user.devicePIN, salt: user.salt, iterations: iterations)
        guard keys.opensPINCheck(user.pinCheck, userID: userID) else {
            let failures = try store.recordPIN(userID: userID, wrong: true)
            let left = Self.maxPINFailures - failures
            // Each wrong PIN is an event an issuer audits (someone guessing a cardholder's PIN), the lock more so.
            if left > 0 {
                logger.info("wrong app PIN", ["user": userID, "tries_left": String(left)])
            } else {
                logger.warning(
                    "app locked after wrong PINs",
                    ["user": userID, "wrong_pins": String(failures), "unlock": "tokenet issuer unlock ADDR \(userID)"])
            }
            throw IssuerError(
                left > 0 ? .unauthenticated : .locked,
                left > 0
                    ? "the PIN is not correct; \(left == 1 ? "1 try" : "\(left) tries") left before the app locks"
                    : "the PIN is not correct; the app is now locked until the issuer unlocks it")
        }
        if user.pinFailures > 0 { try store.recordPIN(userID: userID, wrong: false) }
        return (user, keys)
    }

    /// The keys to seal new credentials with: the existing user's, or a new user's (PIN set now).
    private func keysForActivation(userID: String, pin: String) throws(IssuerError) -> (
        IssuerAppKeys, newUser: AppUserRecord?
    ) {
        if let (_, keys) = try keys(userID: userID, pin: pin) { return (keys, nil) }
        let salt: [UInt8]
        do {
            salt = try SecureRandom.bytes(16)
        } catch {
            throw IssuerError(.keys, "cannot generate a salt", cause: error)
        }
        let devicePIN = try IssuerAppKeys.randomDevicePIN()
        let keys = try IssuerAppKeys.derive(pin: pin, devicePIN: devicePIN, salt: salt, iterations: iterations)
        return (
            keys,
            AppUserRecord(
                userID: userID, salt: salt, pinCheck: try keys.sealPINCheck(userID: userID), devicePIN: devicePIN)
        )
    }

    // MARK: Activation

    func activate(
        code typedCode: String, referenceID typedReference: String, displayName: String, pin: String, link: String = ""
    )
        async throws(IssuerError) -> IssuerV1.AppActivateResponse
    {
        let (code, referenceID, linkUser) = try Self.activationInput(
            code: typedCode, referenceID: typedReference, link: link)
        try Self.checkDisplayName(displayName)
        guard let enrolment = try store.enrolment(referenceID: referenceID) else {
            throw IssuerError(
                .notFound, "reference \"\(referenceID)\" is unknown to the issuer; check it, or enrol the account again"
            )
        }
        if let linkUser, !linkUser.isEmpty, linkUser != enrolment.userID {
            throw IssuerError(
                .invalidArgument,
                "the activation link names user \(linkUser), but reference \(referenceID) is \(enrolment.userID)'s; "
                    + "open the link from \(linkUser)'s own message")
        }
        do {
            return try await activationTurns.one(enrolment.userID, cancelled: CancellationError()) { () async throws in
                try await self.activateInTurn(
                    code: code, referenceID: referenceID, enrolment: enrolment, displayName: displayName, pin: pin)
            }
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(
                .unavailable, "the activation was cancelled while another one of \(enrolment.userID) was under way")
        }
    }

    private func activateInTurn(
        code: String, referenceID: String, enrolment: (userID: String, accountID: String, createdAtMs: UInt64),
        displayName: String, pin: String
    ) async throws(IssuerError) -> IssuerV1.AppActivateResponse {
        // The PIN is checked before the code reaches the TSP, so a wrong PIN does not use up the code.
        let (keys, newUser) = try keysForActivation(userID: enrolment.userID, pin: pin)
        let name = displayName.isEmpty ? enrolment.accountID : displayName
        let response = try await IssuerEnrolmentBackend.calling("activate the account") { () async throws in
            try await TspV1.Authentication.Client(try self.backend.caller()).verifyActivation(
                .init(activationCode: code, referenceID: referenceID, serverURL: "", displayName: name),
                options: .answeringInTime)
        }
        var answer = IssuerV1.AppActivateResponse(
            result: response.result, userID: enrolment.userID, accountID: enrolment.accountID,
            triesLeft: response.triesLeft, message: response.message)
        if response.result == .success {
            try save([(response, name)], userID: enrolment.userID, keys: keys, newUser: newUser)
            answer.pinSet = newUser != nil
        } else if response.result == .alreadyUsed {
            let held = try store.appAccounts(enrolment.userID).first { $0.accountID == enrolment.accountID }
            if let held, try replaced(held, by: referenceID, createdAtMs: enrolment.createdAtMs) {
                // The TSP activated the account again with this code, which revoked the credentials the app holds,
                // and its answer with the new ones was lost: the account cannot log in, though the app listed it
                // and said "the account is activated".
                _ = try store.deleteAppAccount(held)
                logger.warning(
                    "an account's credentials were replaced by an activation whose answer was lost; removed from the "
                        + "app", ["user": enrolment.userID, "account": enrolment.accountID])
                answer.message = Self.credentialsReplaced(enrolment.accountID)
            } else if held == nil {
                answer.message = Self.credentialsLost(enrolment.accountID)
            } else if let held, !held.referenceID.isEmpty, held.referenceID != referenceID {
                // An older code, used before the one behind the app's credentials was issued (an old message opened
                // again): nothing happened to the account. (Of an account activated before the app kept which code
                // activated it, this cannot be told from a retry of that code: the TSP's words stand.)
                answer.message =
                    "the activation code was already used, and account \(enrolment.accountID) is activated in the app "
                    + "with a newer one: this code is not needed"
            }
        } else if response.result == .expiredCode,
            try store.appAccounts(enrolment.userID).contains(where: { $0.accountID == enrolment.accountID })
        {
            // activate-linked activated the account with a code of its own, which replaced this one: "ask the
            // issuer for a new code" sent the cardholder for a code they do not need. A code that expired with no
            // newer one is not said to be replaced.
            let how = try store.hasNewerEnrolment(than: referenceID) ? "since replaced" : "expired"
            answer.message =
                "account \(enrolment.accountID) is already activated in the app, so this code, \(how), is not needed"
        }
        logger.info(
            "account activation",
            [
                "user": enrolment.userID, "account": enrolment.accountID,
                "result": response.result.protoValueName ?? "\(response.result)",
            ])
        return answer
    }

    /// The code and reference id to activate with, typed or read from the link (and the link's user), checked for
    /// what cannot be an activation code before the TSP counts a try for it: the link pasted as the code used one.
    static func activationInput(code: String, referenceID: String, link: String) throws(IssuerError) -> (
        code: String, referenceID: String, linkUser: String?
    ) {
        var code = code
        var referenceID = referenceID
        var linkUser: String?
        if !link.isEmpty {
            let parsed = try ActivationLink(parsing: link)
            if !code.isEmpty, ActivationCode.normalized(code) != ActivationCode.normalized(parsed.code) {
                throw IssuerError(.invalidArgument, "the activation code differs from the link's; give one of them")
            }
            if !referenceID.isEmpty, referenceID != parsed.referenceID {
                throw IssuerError(.invalidArgument, "the reference id differs from the link's; give one of them")
            }
            (code, referenceID, linkUser) = (parsed.code, parsed.referenceID, parsed.userID)
        }
        guard !code.isEmpty, !referenceID.isEmpty else {
            throw IssuerError(.invalidArgument, "the activation code and the reference id (or the link) are required")
        }
        if code.lowercased().hasPrefix("otp:") {
            throw IssuerError(
                .invalidArgument, "this is the activation link, not the code: open it as the link; no try was used")
        }
        guard ActivationCode.normalized(code).allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw IssuerError(
                .invalidArgument,
                "an activation code has only letters and digits (spaces and dashes are ignored), so this is not one; "
                    + "no try was used")
        }
        return (code, referenceID, linkUser)
    }

    /// The longest name an account may get in the app, in characters (the TSP keeps as many).
    static let maxDisplayNameLength = 64

    /// A name the app can show on one line: 5,000 characters were kept as they came (and cut to 64 at the TSP), and
    /// a control character could rewrite the terminal that lists the accounts.
    static func checkDisplayName(_ name: String) throws(IssuerError) {
        guard name.count <= maxDisplayNameLength else {
            throw IssuerError(
                .invalidArgument,
                "the account's name has \(name.count) characters; at most \(maxDisplayNameLength) fit in the app")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw IssuerError(.invalidArgument, "the account's name holds a control character; use plain text")
        }
        // Stored in the clear by the app and the TSP and shown in every listing of the accounts: a card number
        // there would be card data outside the vault.
        let masked = maskPAN(name)
        guard masked == name else {
            throw IssuerError(
                .invalidArgument,
                "the account's name holds a card number ('\(masked)'); name the account without it, such as Checking")
        }
    }

    /// Activates every account of the user not yet in the app, in one bulk call; one result per account.
    func activateLinked(userID: String, pin: String) async throws(IssuerError) -> IssuerV1.ActivateLinkedResponse {
        guard !userID.isEmpty else { throw IssuerError(.invalidArgument, "user_id is required") }
        do {
            return try await activationTurns.one(userID, cancelled: CancellationError()) { () async throws in
                try await self.activateLinkedInTurn(userID: userID, pin: pin)
            }
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(.unavailable, "the activation was cancelled while another one of \(userID) was under way")
        }
    }

    private func activateLinkedInTurn(userID: String, pin: String) async throws(IssuerError)
        -> IssuerV1.ActivateLinkedResponse
    {
        // The activation code delivered to the cardholder is what proves them; a PIN they choose proves nothing
        // until an account was activated with a code. Without this, anyone allowed to call the app's service could
        // set the PIN of a user who never set one, activate every account, and log in.
        let existing = Set(try store.appAccounts(userID).map(\.accountID))
        guard !existing.isEmpty else {
            // A user the issuer does not have is NOT_FOUND, as Enroll, Accounts and Login answer: told to enrol, the
            // operator set out to enrol a misspelt user.
            try requireKnownUser(userID)
            throw IssuerError(
                .failedPrecondition,
                "no account is activated in \(userID)'s app yet: activate a first account with its activation code "
                    + "(tokenet issuer enroll, then tokenet issuer-app activate), then the others with activate-linked")
        }
        let (keys, newUser) = try keysForActivation(userID: userID, pin: pin)
        let activations = try await backend.linkedActivations(userID: userID, excluding: existing)
        var answer = IssuerV1.ActivateLinkedResponse()
        guard !activations.isEmpty else { return answer }
        let response = try await IssuerEnrolmentBackend.calling("activate the linked accounts") { () async throws in
            try await TspV1.Authentication.Client(try self.backend.caller()).verifyActivations(
                .init(
                    activations: activations.map {
                        .init(
                            activationCode: $0.activationCode, referenceID: $0.referenceID,
                            serverURL: $0.activationURL, displayName: $0.accountID)
                    }), options: .answeringInTime)
        }
        // The accounts the app can keep are kept together; one it cannot (the TSP sent no credentials, sealing
        // failed) is told in its own result, and does not cost the others theirs.
        var accounts: [AppAccountRecord] = []
        var unkept: [String: String] = [:]
        for result in response.results where result.result == .success {
            do {
                accounts.append(try account(result, userID: userID, displayName: result.accountID, keys: keys))
            } catch {
                unkept[result.accountID] =
                    "the TSP activated it, but the app cannot keep its credentials (\(error.message)); ask the issuer "
                    + "to enrol it again"
            }
        }
        if !accounts.isEmpty {
            try store.saveActivation(accounts, newUser: newUser, nowMs: nowMs)
            answer.pinSet = newUser != nil
        }
        for result in response.results {
            if let why = unkept[result.accountID] {
                answer.results.append(
                    IssuerV1.LinkedAccountResult(accountID: result.accountID, result: .unspecified, message: why))
                continue
            }
            answer.results.append(
                IssuerV1.LinkedAccountResult(
                    accountID: result.accountID, result: result.result, message: result.message))
        }
        logger.info(
            "linked accounts activated",
            [
                "user": userID, "accounts": "\(answer.results.count)",
                "succeeded": "\(answer.results.filter { $0.result == .success }.count)",
            ])
        return answer
    }

    /// A code the TSP reports used for an account the app does not hold: the TSP activated it, but its answer with
    /// the credentials was lost (a cut connection, an app stopped meanwhile). The TSP's own message ("the account
    /// is activated") would send the cardholder to a login that cannot work; a new enrolment gives a new code.
    static func credentialsLost(_ accountID: String) -> String {
        "the activation code was already used, but the app never received the credentials of account \(accountID) "
            + "(the answer was lost); ask the issuer to enrol the account again for a new code"
    }

    /// Whether the code of enrolment `referenceID` (made at `createdAtMs`), reported used, replaced the app's
    /// credentials of `held`: only a code issued after the one behind them can have (enrolling again replaces the
    /// account's earlier code, so an older code was used before them). The app's credentials' enrolment is compared
    /// by the order they were made in; one no longer kept, or an account activated before the app kept it, by time.
    func replaced(_ held: AppAccountRecord, by referenceID: String, createdAtMs: UInt64) throws(IssuerError) -> Bool {
        guard held.referenceID != referenceID else { return false }
        if !held.referenceID.isEmpty, let newer = try store.enrolment(referenceID, isNewerThan: held.referenceID) {
            return newer
        }
        return held.activatedAtMs < createdAtMs
    }

    /// A code the TSP reports used for an account the app holds credentials of another code for: the TSP activated
    /// the account again with it, which revoked those, and its answer with the new ones was lost.
    static func credentialsReplaced(_ accountID: String) -> String {
        "the activation code was already used, but the app never received the credentials it gave account "
            + "\(accountID) (the answer was lost), and they replaced the ones the app held, which no longer work: the "
            + "account is removed from the app; ask the issuer to enrol it again for a new code"
    }

    /// Saves what the TSP's activations gave (with the app's new user, when the activation makes it) in one write.
    private func save(
        _ activated: [(response: TspV1.VerifyActivationResponse, displayName: String)], userID: String,
        keys: IssuerAppKeys, newUser: AppUserRecord?
    ) throws(IssuerError) {
        var accounts: [AppAccountRecord] = []
        for (response, displayName) in activated {
            accounts.append(try account(response, userID: userID, displayName: displayName, keys: keys))
        }
        try store.saveActivation(accounts, newUser: newUser, nowMs: nowMs)
    }

    private func account(
        _ response: TspV1.VerifyActivationResponse, userID: String, displayName: String, keys: IssuerAppKeys
    ) throws(IssuerError) -> AppAccountRecord {
        guard let user = response.userCredential, let device = response.deviceCredential else {
            throw IssuerError(.unavailable, "the TSP activated the account without provisioning its credentials")
        }
        do {
            return AppAccountRecord(
                userID: userID, accountID: response.accountID, displayName: displayName,
                userCredentialID: user.credentialID,
                userSecretSealed: try keys.user.seal(
                    Array(user.secret), associatedData: Array("user-credential:\(user.credentialID)".utf8)),
                deviceCredentialID: device.credentialID,
                deviceSecretSealed: try keys.device.seal(
                    Array(device.secret), associatedData: Array("device-credential:\(device.credentialID)".utf8)),
                digits: Int(user.digits), userCounter: user.counter, deviceCounter: device.counter,
                activatedAtMs: nowMs, referenceID: response.referenceID)
        } catch {
            throw IssuerError(.keys, "cannot seal the credentials", cause: IssuerDescribedError(error))
        }
    }

    // MARK: Accounts

    func accounts(userID: String) throws(IssuerError) -> IssuerV1.AppAccountsResponse {
        guard !userID.isEmpty else { throw IssuerError(.invalidArgument, "user_id is required") }
        // A user the issuer does not have was answered "no account is activated", as for a real one, while enrol
        // and activate-linked answer NOT_FOUND: a misspelt user id looked like an app not set up yet.
        guard try store.accounts(ofCardholder: userID) != nil else {
            throw IssuerError(.notFound, "the issuer has no user \"\(userID)\"")
        }
        let user = try store.appUser(userID)
        return IssuerV1.AppAccountsResponse(
            accounts: try store.appAccounts(userID).map {
                IssuerV1.AppAccount(
                    accountID: $0.accountID, displayName: $0.displayName, activatedAtMs: $0.activatedAtMs)
            },
            pinSet: user != nil, pinLocked: (user?.pinFailures ?? 0) >= Self.maxPINFailures)
    }

    /// Removes an account from the app, as the signed-in user does: the PIN first (a wrong one uses a try, a locked
    /// app refuses), then the TSP revokes the account's credentials, then the app forgets them. Forgetting them
    /// first left them able to sign in, and the access tokens they had signed in still activated the account's
    /// cards; an unreachable TSP now leaves the account in the app, to be removed again.
    ///
    /// It takes the user's turn as activations do: an activation of the same account while the TSP revoked the
    /// old credentials saved new ones, which the removal then deleted from the app while the TSP kept them.
    func deleteAccount(userID: String, accountID: String, pin: String) async throws(IssuerError) -> Int {
        guard !userID.isEmpty, !accountID.isEmpty else {
            throw IssuerError(.invalidArgument, "user_id and account_id are required")
        }
        try requireKnownUser(userID)
        do {
            return try await activationTurns.one(userID, cancelled: CancellationError()) { () async throws in
                try await self.deleteAccountInTurn(userID: userID, accountID: accountID, pin: pin)
            }
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(
                .unavailable,
                "the removal was cancelled while another activation or removal of \(userID)'s accounts was under "
                    + "way; nothing changed")
        }
    }

    private func deleteAccountInTurn(userID: String, accountID: String, pin: String) async throws(IssuerError)
        -> Int
    {
        guard try store.appUser(userID) != nil, try keys(userID: userID, pin: pin) != nil else {
            throw IssuerError(.notFound, "user \(userID) has not activated the app; there is no account to remove")
        }
        guard let account = try store.appAccounts(userID).first(where: { $0.accountID == accountID }) else {
            throw IssuerError(.notFound, "account \(accountID) is not activated in \(userID)'s app")
        }
        let request = TspV1.RemoveCredentialsRequest(
            userCredentialID: account.userCredentialID, deviceCredentialID: account.deviceCredentialID)
        let removed: TspV1.RemoveCredentialsResponse
        do {
            removed = try await IssuerEnrolmentBackend.calling("revoke the account's credentials") {
                () async throws in
                try await TspV1.Authentication.Client(try self.backend.caller()).removeCredentials(
                    request, options: .answeringInTime)
            }
        } catch {
            throw IssuerError(
                error.code, "\(error.message); account \(accountID) stays in the app, remove it again",
                cause: error.cause)
        }
        let left = try store.deleteAppAccount(account)
        logger.info(
            "account removed from the app",
            ["user": userID, "account": accountID, "credentials_revoked": "\(removed.removed)"])
        return left
    }

    // MARK: CardholderLogin

    func accessToken(forUser userID: String, pin: String) async throws(IssuerError) -> String {
        try await login(userID: userID, pin: pin).accessToken
    }
}
