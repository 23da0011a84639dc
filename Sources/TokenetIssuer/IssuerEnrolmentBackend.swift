import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// The issuer backend's part of strong authentication: it enrols its users' accounts with the TSP, delivers the
/// activation code out of band (the outbox, with an `otp://` provisioning link), gives the app the activations of
/// the linked accounts, and unlocks credentials. Activation codes are never logged.
final class IssuerEnrolmentBackend: Sendable {
    let store: IssuerStore
    let tsp: TSPLink
    let logger: Logger
    let now: @Sendable () -> Date

    init(store: IssuerStore, tsp: TSPLink, logger: Logger, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.tsp = tsp
        self.logger = logger
        self.now = now
    }

    /// Enrols one account and delivers its activation code to the cardholder.
    func enroll(userID: String, accountID: String) async throws(IssuerError) -> IssuerV1.EnrollResponse {
        guard !userID.isEmpty, !accountID.isEmpty else {
            throw IssuerError(.invalidArgument, "user_id and account_id are required")
        }
        try requireAccount(accountID, of: userID)
        let activation = try await register(
            userID: userID, accountIDs: [accountID], what: "enrol the account",
            ifUnanswered: "no code was sent to the cardholder, so run the command again for a new one (it replaces "
                + "any the TSP made)")[0]
        let phone = Masking.phone(try store.cardholderPhone(userID) ?? "")
        // In the one-time codes' words: rounded to minutes, a TSP whose codes last 10 s had it say "1 minute".
        let lifetime = IssuerOtpService.timeLeft(until: activation.expiresAtMs, from: now())
        try store.recordOutbox(
            IssuerV1.OutboxMessage(
                sentAtMs: UInt64(max(0, now().timeIntervalSince1970 * 1000)), channel: "sms",
                maskedDestination: phone,
                text: "Your \(try Self.bankName(store)) app activation code is \(activation.activationCode) (reference "
                    + "\(activation.referenceID)); it expires in \(lifetime). Or open "
                    + Self.link(activation, userID: userID) + ". Never share it.",
                digitalCardID: "enrolment:\(activation.referenceID)"),
            codeExpiresAtMs: activation.expiresAtMs)
        logger.info(
            "account enrolled; activation code delivered",
            ["user": userID, "account": accountID, "ref": activation.referenceID, "to": phone])
        return IssuerV1.EnrollResponse(
            referenceID: activation.referenceID, expiresAtMs: activation.expiresAtMs, maskedDestination: phone)
    }

    /// The activation message's link (`ActivationLink`).
    /// The issuer's name as its fixture gives it ("Second Bank"): the code's message names the bank whose app it
    /// activates (every issuer's said "Tokenet Bank").
    static func bankName(_ store: IssuerStore) throws(IssuerError) -> String {
        let name = try store.profile()?.name ?? ""
        return name.isEmpty ? "bank's" : name
    }

    static func link(_ activation: TspV1.Activation, userID: String) -> String {
        ActivationLink(
            serverURL: activation.activationURL, userID: userID, code: activation.activationCode,
            referenceID: activation.referenceID
        ).text
    }

    /// Activations for the user's accounts that `excluding` does not name (the ones the app has not activated).
    func linkedActivations(userID: String, excluding: Set<String>) async throws(IssuerError) -> [TspV1.Activation] {
        guard let accounts = try store.accounts(ofCardholder: userID) else {
            throw IssuerError(.notFound, "the issuer has no user \"\(userID)\"")
        }
        let linked = accounts.filter { !excluding.contains($0) }
        guard !linked.isEmpty else { return [] }
        return try await register(
            userID: userID, accountIDs: linked, what: "activate the linked accounts",
            ifUnanswered: "activate them again")
    }

    /// Lifts the app's own PIN lock and the TSP's credential locks; says which of them were locked.
    func unlock(userID: String, accountID: String) async throws(IssuerError) -> IssuerV1.UnlockResponse {
        guard !userID.isEmpty else { throw IssuerError(.invalidArgument, "user_id is required") }
        if accountID.isEmpty { _ = try requireUser(userID) } else { try requireAccount(accountID, of: userID) }
        // The app's own PIN lock is lifted with the TSP's credential locks.
        let appWasLocked =
            (try store.appUser(userID)?.pinFailures ?? 0) >= IssuerAppAuthenticator.maxPINFailures
        try store.recordPIN(userID: userID, wrong: false)
        let response: TspV1.UnlockCredentialsResponse
        do {
            response = try await Self.calling("unlock the credentials") { () async throws in
                try await TspV1.Enrolment.Client(try self.caller()).unlockCredentials(
                    .init(userID: userID, accountID: accountID), options: .answeringInTime)
            }
        } catch let error where appWasLocked {
            // The app's lock is already lifted: said, or the operator took the whole unlock for failed while the
            // app's PIN worked again, and the retry answered "nothing was locked".
            throw IssuerError(
                error.code,
                "\(error.message); the app's own PIN lock is lifted, but its credentials at the TSP may still be "
                    + "locked: unlock again once the TSP answers", cause: error.cause)
        }
        logger.info(
            "credentials unlocked",
            ["user": userID, "unlocked_at_tsp": "\(response.unlocked)", "app_unlocked": "\(appWasLocked)"])
        return IssuerV1.UnlockResponse(unlocked: response.unlocked, appUnlocked: appWasLocked)
    }

    /// `what` and `ifUnanswered` are the caller's, for `calling`: an enrolment and an app's linked activation
    /// tell a person different things to do.
    private func register(
        userID: String, accountIDs: [String], what: String, ifUnanswered: String
    ) async throws(IssuerError) -> [TspV1.Activation] {
        let response = try await Self.calling(what, ifUnanswered: ifUnanswered) { () async throws in
            try await TspV1.Enrolment.Client(try self.caller()).registerEnrolment(
                .init(userID: userID, accountIds: accountIDs), options: .answeringInTime)
        }
        guard response.activations.count == accountIDs.count else {
            throw IssuerError(.unavailable, "the TSP answered the enrolment with \(response.activations.count) codes")
        }
        for activation in response.activations {
            try store.recordEnrolment(
                referenceID: activation.referenceID, userID: userID, accountID: activation.accountID,
                expiresAtMs: activation.expiresAtMs, nowMs: UInt64(max(0, now().timeIntervalSince1970 * 1000)))
        }
        return response.activations
    }

    /// The user's accounts; NOT_FOUND naming the user when the issuer has no such cardholder.
    private func requireUser(_ userID: String) throws(IssuerError) -> [String] {
        guard let accounts = try store.accounts(ofCardholder: userID) else {
            throw IssuerError(.notFound, "the issuer has no user \"\(userID)\"")
        }
        return accounts
    }

    private func requireAccount(_ accountID: String, of userID: String) throws(IssuerError) {
        let accounts = try requireUser(userID)
        guard accounts.contains(accountID) else {
            throw IssuerError(
                .notFound,
                "user \(userID) has no account \"\(accountID)\"; their accounts: \(accounts.joined(separator: ", "))")
        }
    }

    func caller() throws(IssuerError) -> any RPCCaller {
        guard let caller = tsp.caller else {
            throw IssuerError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        return caller
    }

    /// A call to the TSP; its failures become `IssuerError`s saying what could not be done. `ifUnanswered` says what
    /// to do when the TSP did not answer in time, and so may have done it all the same.
    static func calling<T>(
        _ what: String, ifUnanswered: String? = nil, _ body: () async throws -> T
    ) async throws(IssuerError) -> T {
        do {
            return try await body()
        } catch let error as IssuerError {
            throw error
        } catch let error as RPCError {
            switch error.code {
            case .invalidArgument: throw IssuerError(.invalidArgument, "the TSP refused to \(what): \(error.message)")
            case .notFound: throw IssuerError(.notFound, "cannot \(what): \(error.message)")
            case .permissionDenied, .failedPrecondition:
                throw IssuerError(.failedPrecondition, "the TSP refused to \(what): \(error.message)")
            case .resourceExhausted: throw IssuerError(.tspExhausted, "the TSP cannot \(what) now: \(error.message)")
            // A call that never left (its deadline passed while connecting) did nothing there: UNAVAILABLE below.
            case .deadlineExceeded where !error.callWasNeverSent:
                // The reason as the person knows it: the issuer's own, shorter, limit on its call (a share of
                // theirs, in ms) is none they set.
                let reason =
                    ServerContext.current?.deadline != nil
                    ? "it did not answer within this call's deadline" : error.message
                throw IssuerError(
                    .tspDidNotAnswer,
                    "the TSP did not answer in time to \(what) (\(reason)); it may have done so all the same"
                        + (ifUnanswered.map { ": \($0)" } ?? ""))
            default:
                let code = error.code.protoValueName ?? "\(error.code.rawValue)"
                throw IssuerError(.unavailable, "cannot \(what) at the TSP (\(code)): \(error.message)")
            }
        } catch {
            throw IssuerError(.unavailable, "cannot \(what) at the TSP", cause: IssuerDescribedError(error))
        }
    }
}
