import Foundation
import TokenetCard
import TokenetRPC
import TokenetWire

/// The issuer app's login: codes from the user credential (opened by the PIN) and the device credential (opened by
/// the device PIN) buy an access token from the TSP.
extension IssuerAppAuthenticator {
    /// For a user the app has no credentials of: what to do, with the commands that do it.
    static func notActivated(_ userID: String) -> String {
        "user \(userID) has not activated the app; activate one of the user's accounts first: the issuer enrols it "
            + "(Enroll; tokenet issuer enroll), then the app activates it with the code it was sent "
            + "(Activate; tokenet issuer-app activate)"
    }

    /// Refuses a user the issuer does not have as such: told the app was not activated yet, a mistyped user id was
    /// sent to enrol, which then answered that the issuer has no such user.
    func requireKnownUser(_ userID: String) throws(IssuerError) {
        guard try store.accounts(ofCardholder: userID) != nil else {
            throw IssuerError(.notFound, "the issuer has no user \"\(userID)\"")
        }
    }

    /// Logs the user in: the PIN opens the user credential, the device PIN the device credential, and a code from
    /// each buys an access token from the TSP. When the app's counter ran ahead of the TSP's window (logins that
    /// never reached it), the app resynchronises that credential with two consecutive codes and tries again.
    func login(userID: String, pin: String) async throws(IssuerError) -> IssuerV1.AppLoginResponse {
        // One login of a user at a time, as on one phone: logins at once took counters n and n+1, the code of n+1
        // reached the TSP first, and n, then behind its window, was refused as a wrong code and counted towards
        // the credential's lock, though the person had the right PIN.
        do {
            return try await loginTurns.one(userID, cancelled: CancellationError()) { () async throws in
                try await self.loginInTurn(userID: userID, pin: pin)
            }
        } catch let error as IssuerError {
            throw error
        } catch {
            throw IssuerError(.unavailable, "the login of \(userID) was cancelled while another one was under way")
        }
    }

    private func loginInTurn(userID: String, pin: String) async throws(IssuerError) -> IssuerV1.AppLoginResponse {
        guard !userID.isEmpty else { throw IssuerError(.invalidArgument, "user_id is required") }
        try requireKnownUser(userID)
        guard try store.appUser(userID) != nil else {
            throw IssuerError(.notFound, Self.notActivated(userID))
        }
        guard let (_, keys) = try keys(userID: userID, pin: pin) else {
            throw IssuerError(.notFound, Self.notActivated(userID))
        }
        let accounts = try store.appAccounts(userID)
        guard !accounts.isEmpty else {
            throw IssuerError(.notFound, "no account is activated in \(userID)'s app; activate one first")
        }
        // The app signs in with any of its accounts (the access token is the user's): one whose credentials the TSP
        // no longer has, or has locked, no longer blocks every PIN operation while another account's work. The
        // first refusal is answered when none signs in, naming its account and the way out.
        var firstRefusal: IssuerError?
        for account in accounts {
            do {
                return try await login(userID: userID, account: account, keys: keys)
            } catch let error where [.notFound, .locked, .unauthenticated, .keys].contains(error.code) {
                logger.info(
                    "login with an account refused; trying the app's next account",
                    ["user": userID, "account": account.accountID, "error": error.message])
                firstRefusal = firstRefusal ?? Self.naming(account, in: error)
            }
        }
        throw firstRefusal ?? IssuerError(.notFound, "no account of \(userID) could sign in")
    }

    /// `error` of a login with `account`, with the account named and the way out: the TSP's words named only a
    /// credential id, and `accounts` still listed the account as activated.
    private static func naming(_ account: AppAccountRecord, in error: IssuerError) -> IssuerError {
        let (user, id) = (account.userID, account.accountID)
        // A locked credential's message says already how to unlock it.
        guard error.code == .notFound else { return IssuerError(error.code, "account \(id): \(error.message)") }
        // The TSP's own advice ("activate the account again") is given below with the commands that do it.
        var reason = Substring(error.message)
        if reason.hasSuffix(Self.tspActivateAgain) { reason = reason.dropLast(Self.tspActivateAgain.count) }
        return IssuerError(
            error.code,
            "account \(id): \(reason); activate account \(id) again (tokenet issuer enroll ADDR \(user) \(id), "
                + "then tokenet issuer-app activate with the code it sends) or remove it from the app (tokenet "
                + "issuer-app delete-account ADDR \(user) \(id) --pin PIN)")
    }

    /// How the TSP ends a NOT_FOUND of a credential it does not know (`TSPStore+Auth`).
    private static let tspActivateAgain = "; activate the account again"

    private func login(userID: String, account: AppAccountRecord, keys: IssuerAppKeys) async throws(IssuerError)
        -> IssuerV1.AppLoginResponse
    {
        let credentials = try Self.open(account, keys: keys)
        var response = try await attemptLogin(account, credentials)
        // Each of the two credentials may need its own resynchronisation. A resync the TSP refused ends the login
        // there: each later code would be one more failure of the credential at the TSP, and one login spent up to
        // five of them.
        for _ in 0..<2 where response.result == .resyncRequired {
            let resynced = try await resync(account, credentials, failed: response.failedCredentialID)
            guard resynced.result == .success else {
                throw Self.resyncRefused(resynced, userID: userID, account: account)
            }
            response = try await attemptLogin(account, credentials)
        }
        switch response.result {
        case .success:
            logger.info("user logged in", ["user": userID, "account": account.accountID])
            return IssuerV1.AppLoginResponse(
                accessToken: response.accessToken, expiresAtMs: response.expiresAtMs,
                deviceID: account.deviceCredentialID, accountID: account.accountID)
        case .credentialLocked:
            logger.warning("login refused: credential locked at the TSP", ["user": userID, "reason": response.message])
            // With the command that unlocks it, as the app's own lock says it.
            throw IssuerError(.locked, "\(response.message) (tokenet issuer unlock ADDR \(userID))")
        case .incorrectCode:
            logger.info("login refused by the TSP", ["user": userID, "reason": response.message])
            // The PIN opened the credentials, so the codes are the app's own: a code refused as not correct means
            // the app's counter is outside the TSP's windows (codes the TSP took without the app hearing of it, or
            // a TSP that lost its state). Trying again only spends the credential's failures, and unlocking it
            // leaves the counters apart: the account's credentials must be made again.
            throw IssuerError(
                .unauthenticated,
                "the TSP refused the login: \(response.message). The app made its codes with the credentials the "
                    + "PIN opened, so the app and the TSP are out of step; logging in again spends the credential's "
                    + "failures: enrol the account again (tokenet issuer enroll ADDR \(userID) \(account.accountID), "
                    + "then tokenet issuer-app activate with the code it sends)")
        default:
            logger.info("login refused by the TSP", ["user": userID, "reason": response.message])
            throw IssuerError(.unauthenticated, "the TSP refused the login: \(response.message)")
        }
    }

    /// The account's two credentials, opened with the app's keys.
    private static func open(_ account: AppAccountRecord, keys: IssuerAppKeys) throws(IssuerError) -> (
        user: HOTP, device: HOTP
    ) {
        do {
            let userSecret = try keys.user.open(
                account.userSecretSealed, associatedData: Array("user-credential:\(account.userCredentialID)".utf8))
            let deviceSecret = try keys.device.open(
                account.deviceSecretSealed,
                associatedData: Array("device-credential:\(account.deviceCredentialID)".utf8))
            return (
                try HOTP(secret: userSecret, digits: account.digits),
                try HOTP(secret: deviceSecret, digits: account.digits)
            )
        } catch {
            throw IssuerError(.keys, "cannot open the app's credentials", cause: error)
        }
    }

    /// Codes at the next counters (stored advanced first), sent to the TSP's Login.
    private func attemptLogin(_ account: AppAccountRecord, _ credentials: (user: HOTP, device: HOTP))
        async throws(IssuerError) -> TspV1.LoginResponse
    {
        try await IssuerEnrolmentBackend.calling("log in") { () async throws in
            let caller = try self.backend.caller()
            let counters = try self.store.takeCounters(userID: account.userID, accountID: account.accountID)
            let request = TspV1.LoginRequest(
                userCredentialID: account.userCredentialID, userCode: try Self.code(credentials.user, counters.user),
                deviceCredentialID: account.deviceCredentialID,
                deviceCode: try Self.code(credentials.device, counters.device))
            return try await self.givingBack(counters, of: account, ifNeverSent: 1) {
                try await TspV1.Authentication.Client(caller).login(
                    request, options: .answeringInTime)
            }
        }
    }

    /// Why a login stopped at a resynchronisation the TSP refused, with what the cardholder can do.
    private static func resyncRefused(
        _ resynced: TspV1.ResyncResponse, userID: String, account: AppAccountRecord
    ) -> IssuerError {
        let said = resynced.message.isEmpty ? "\(resynced.result)" : resynced.message
        switch resynced.result {
        case .credentialLocked:
            return IssuerError(
                .locked,
                "the TSP refused to resynchronise the account's credential: \(said) (tokenet issuer unlock ADDR "
                    + "\(userID))")
        default:
            // Codes outside the resynchronisation window: the app and the TSP are too far apart for codes to bring
            // them together, as for a login refused as incorrect.
            return IssuerError(
                .unauthenticated,
                "the TSP refused to resynchronise the account's credential: \(said). The app's codes are too far "
                    + "from the TSP's; logging in again spends the credential's failures: enrol the account again "
                    + "(tokenet issuer enroll ADDR \(userID) \(account.accountID), then tokenet issuer-app activate "
                    + "with the code it sends)")
        }
    }

    /// Two consecutive codes of the credential the TSP found ahead of its window; returns the TSP's answer.
    private func resync(_ account: AppAccountRecord, _ credentials: (user: HOTP, device: HOTP), failed: String)
        async throws(IssuerError) -> TspV1.ResyncResponse
    {
        let response = try await IssuerEnrolmentBackend.calling("resynchronise the credential") { () async throws in
            let caller = try self.backend.caller()
            let first = try self.store.takeCounters(userID: account.userID, accountID: account.accountID)
            let second = try self.store.takeCounters(userID: account.userID, accountID: account.accountID)
            let isUser = failed == account.userCredentialID
            let hotp = isUser ? credentials.user : credentials.device
            let request = TspV1.ResyncRequest(
                credentialID: failed, firstCode: try Self.code(hotp, isUser ? first.user : first.device),
                secondCode: try Self.code(hotp, isUser ? second.user : second.device))
            return try await self.givingBack(first, of: account, ifNeverSent: 2) {
                try await TspV1.Authentication.Client(caller).resync(
                    request, options: .answeringInTime)
            }
        }
        logger.info(
            response.result == .success ? "credential resynchronised" : "credential resynchronisation refused",
            [
                "user": account.userID, "credential": failed,
                "result": response.result.protoValueName ?? "\(response.result)",
            ])
        return response
    }

    /// Runs a call that used the codes from `taken` on (`steps` of each counter), and gives the counters back when
    /// the call never left the issuer (the TSP could not be reached): the TSP saw none of those codes. Every login
    /// tried while the TSP was cut off moved the app's counters on, until they were beyond the TSP's
    /// resynchronisation window and no login could succeed again, whatever the PIN.
    private func givingBack<T>(
        _ taken: (user: UInt64, device: UInt64), of account: AppAccountRecord, ifNeverSent steps: UInt64,
        _ call: () async throws -> T
    ) async throws -> T {
        do {
            return try await call()
        } catch let error as RPCError where error.callWasNeverSent {
            try? store.giveBackCounters(of: account, to: taken, ifAdvancedBy: steps)
            throw error
        }
    }

    private static func code(_ hotp: HOTP, _ counter: UInt64) throws(IssuerError) -> String {
        do {
            return try hotp.code(counter: counter)
        } catch {
            throw IssuerError(.keys, "cannot compute an HOTP code", cause: error)
        }
    }
}
