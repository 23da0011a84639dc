import Foundation
import Synchronization
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// `tokenet.issuer.v1.IssuerAppToApp`: the issuer app's in-app activation. The wallet opens the app with the
/// caller's identity and the activation data; the cardholder signs in to the app, which activates the token at the
/// TSP with the access token and answers the wallet. The PIN and the access token are never logged.
final class IssuerAppToAppService: IssuerV1.IssuerAppToApp.ServiceProtocol {
    let store: IssuerStore
    let tsp: TSPLink
    /// The wallet provider: resolves Apple Pay passes and receives the BANKING_APP_ACTIVATION_RESPONSE.
    let wallet: (any RPCCaller)?
    /// The authentication service's login; nil until it is wired in, and then signing in is refused.
    let login: (any CardholderLogin)?
    let logger: Logger
    let now: @Sendable () -> Date
    /// How long the issuer waits for the wallet to take the in-app outcome. The token is activated at the TSP by
    /// then, and the TSP tells the wallet of its state anyway (CARD_STATE): a wallet that cannot be reached must not
    /// hold the cardholder's answer for the rest of the call's deadline, which gave a partitioned link's cardholder
    /// DEADLINE_EXCEEDED for an activation that had succeeded. Five seconds, as the TSP gives the issuer.
    let walletNoticeLimit: Duration
    let sessions = Mutex(AppToAppSessions())

    init(
        store: IssuerStore, tsp: TSPLink, wallet: (any RPCCaller)?, login: (any CardholderLogin)?, logger: Logger,
        now: @escaping @Sendable () -> Date, walletNoticeLimit: Duration = .seconds(5)
    ) {
        self.store = store
        self.tsp = tsp
        self.wallet = wallet
        self.login = login
        self.logger = logger
        self.now = now
        self.walletNoticeLimit = walletNoticeLimit
    }

    var nowMs: UInt64 { UInt64(max(0, now().timeIntervalSince1970 * 1000)) }

    func openApp(_ request: IssuerV1.OpenAppRequest, context: ServerContext) async throws -> IssuerV1.OpenAppResponse {
        let log = logger.withTraceID(context.traceID)
        let checked: AppToAppRequest
        switch AppToAppRequest.parse(
            caller: request.caller, activationData: request.activationData, serialNumber: request.serialNumber)
        {
        case .success(let value): checked = value
        case .failure(let rejection):
            // Refusals are logged at debug: the node's call log writes each at info, with its status and message.
            log.debug("app-to-app refused", ["caller": request.caller, "reason": rejection.description])
            throw RPCError(rejection.isUnknownCaller ? .permissionDenied : .invalidArgument, rejection.description)
        }
        let (digitalCardID, last4, scheme) = try await resolve(checked.reference)
        guard let tokenCard = try store.card(forDigitalCardID: digitalCardID) else {
            throw RPCError(.notFound, "the issuer knows no token \"\(digitalCardID)\"")
        }
        if let blocked = tokenCard.blockedRefusal {
            throw RPCError(.failedPrecondition, "\(blocked): its tokens are not activated")
        }
        // Only the wallet the token lives in opens the app for it: another wallet node that learnt the token's
        // reference could otherwise have the cardholder activate it there. (A caller without an identity, over
        // --plaintext, cannot be told apart and is let through, as every check of identities is there.)
        if let expected = try store.walletNodeID(ofDigitalCardID: digitalCardID), let caller = context.peer?.nodeID,
            caller != expected
        {
            log.debug("app-to-app refused", ["caller_node": caller, "reason": "the token is another wallet's"])
            // The token is not named: the caller sent a reference to it, and it is another wallet's.
            throw RPCError(
                .permissionDenied,
                "the token this activation data names was not digitized through this wallet node; only the wallet "
                    + "that holds it opens the issuer app for it")
        }
        if let scheme, tokenCard.pan.scheme != scheme {
            throw RPCError(
                .invalidArgument,
                "the activation data is \(scheme)'s, but token \"\(digitalCardID)\" is a "
                    + "\(tokenCard.pan.scheme) card")
        }
        guard let cardholderID = try store.cardholderID(ofAccount: tokenCard.accountID) else {
            throw RPCError(.internal, "the account of card \(tokenCard.id) has no cardholder")
        }
        let candidates = try store.cards(ofCardholder: cardholderID).filter { $0.pan.last4 == last4 }
        guard !candidates.isEmpty else {
            throw RPCError(.notFound, "the cardholder has no card ending \(last4)")
        }
        guard candidates.contains(where: { $0.id == tokenCard.id }) else {
            throw RPCError(
                .invalidArgument, "the card ending \(last4) is not the card of token \"\(digitalCardID)\"")
        }
        let nowMs = self.nowMs
        let session = AppToAppSessions.Session(
            id: "app-" + UUID().uuidString.lowercased(), caller: checked.caller, digitalCardID: digitalCardID,
            cardID: tokenCard.id, cardLast4: last4, cardholderID: cardholderID,
            expiresAtMs: nowMs + AppToAppSessions.lifetimeMs, walletNodeID: context.peer?.nodeID)
        sessions.withLock { $0.open(session, nowMs: nowMs) }
        log.info(
            "issuer app opened for activation",
            [
                "caller": checked.caller.rawValue, "digital_card_id": digitalCardID, "card": tokenCard.id,
                "session": session.id,
            ])
        return IssuerV1.OpenAppResponse(
            sessionID: session.id, message: "card ending \(last4) — sign in to activate", cardLast4: last4,
            digitalCardID: digitalCardID, expiresAtMs: session.expiresAtMs)
    }

    /// The token and the card's last four digits the request names; an Apple Pay pass is looked up in the wallet
    /// (its deviceAccountIdentifier and primaryAccountNumberSuffix). The scheme is known only from Android data.
    private func resolve(_ reference: ActivationReference) async throws -> (String, String, CardScheme?) {
        switch reference {
        case .token(let digitalCardID, let last4, let scheme):
            return (digitalCardID, last4, scheme)
        case .pass(let serialNumber):
            guard let wallet else {
                throw RPCError(
                    .failedPrecondition,
                    "issuer-node was started without --wallet, so it cannot look up Apple Pay passes")
            }
            let tokens: WalletV1.CurrentTokensResponse
            do {
                tokens = try await WalletV1.WalletEvents.Client(wallet).allCurrentTokens {
                    $0.passSerialNumber == serialNumber
                }
            } catch let error as RPCError {
                throw RPCError(.unavailable, "cannot look up the pass in the wallet: \(error.message)")
            }
            guard let pass = tokens.tokens.first(where: { $0.passSerialNumber == serialNumber }) else {
                throw RPCError(.notFound, "the wallet has no pass with serial number \"\(serialNumber)\"")
            }
            return (pass.digitalCardID, pass.panLast4, nil)
        }
    }

    func authorize(_ request: IssuerV1.AuthorizeAppSessionRequest, context: ServerContext) async throws
        -> IssuerV1.AuthorizeAppSessionResponse
    {
        let log = logger.withTraceID(context.traceID)
        guard !request.sessionID.isEmpty else { throw RPCError(.invalidArgument, "session_id is required") }
        guard request.deny != !request.pin.isEmpty else {
            throw RPCError(.invalidArgument, "give either the cardholder's PIN or deny, not both or neither")
        }
        let session: AppToAppSessions.Session
        switch sessions.withLock({ $0.begin(request.sessionID, nowMs: nowMs) }) {
        case .proceed(let value): session = value
        case .refused(let code, let message): throw RPCError(code, message)
        }
        // Every way out but `finish` leaves the session open for another try. A storage error (a database locked
        // by another process) escaped with the session held as "already being completed" until it expired, 20
        // minutes on, with nothing running.
        do {
            return try await authorize(session, request, log: log)
        } catch {
            sessions.withLock { $0.reopen(session.id) }
            throw error
        }
    }

    /// `authorize` once the session is held for this call; `finish` ends it.
    private func authorize(
        _ session: AppToAppSessions.Session, _ request: IssuerV1.AuthorizeAppSessionRequest, log: Logger
    ) async throws -> IssuerV1.AuthorizeAppSessionResponse {
        if request.deny {
            log.info("the cardholder declined in the issuer app", ["session": session.id])
            return await finish(session, .failure, reason: "the cardholder declined in the issuer app", log: log)
        }
        guard let login else {
            throw RPCError(
                .failedPrecondition,
                "signing in needs the authentication service, which this issuer app does not have; deny the "
                    + "session or use another ID&V method")
        }
        // An app in which accounts are activated acts for those: one removed from it (delete-account), or never
        // activated there, does not activate its cards, though the cardholder can still sign in for the others.
        // Checked before the PIN, which a refusal then does not spend. An app with no account activated in it has
        // nothing to check against, and signs the cardholder in as before.
        // Blocked while the session was open: the check at its opening is not enough.
        if let blocked = try store.card(id: session.cardID)?.blockedRefusal {
            throw RPCError(.failedPrecondition, "\(blocked): its tokens are not activated")
        }
        let appAccounts = try store.appAccounts(session.cardholderID).map(\.accountID)
        if !appAccounts.isEmpty, let card = try store.card(id: session.cardID), !appAccounts.contains(card.accountID) {
            throw RPCError(
                .failedPrecondition,
                "card ending \(session.cardLast4) is of account \(card.accountID), which is not activated in "
                    + "\(session.cardholderID)'s app; activate it there (tokenet issuer-app activate-linked), or "
                    + "deny the session and use another ID&V method")
        }
        let accessToken: String
        do {
            accessToken = try await login.accessToken(forUser: session.cardholderID, pin: request.pin)
        } catch {
            // In the words of its status, which carry the advice for the issuer's own failures (a database another
            // process locked: "try again once it lets go"), as a login says them.
            let reason = error.shownInSignIn
            log.info("cardholder sign-in failed", ["session": session.id, "reason": reason])
            throw RPCError(error.signInStatus, "the cardholder could not be signed in: \(reason)")
        }
        guard let caller = tsp.caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        do {
            let activated = try await TspV1.IssuerIdv.Client(caller).activateDigitalCard(
                TspV1.ActivateDigitalCardRequest(digitalCardID: session.digitalCardID, accessToken: accessToken))
            log.info(
                "token activated in the issuer app",
                ["session": session.id, "digital_card_id": session.digitalCardID, "changed": "\(activated.changed)"])
            var response = await finish(
                session, .approved, tokenState: activated.tokenState, stateVersion: activated.stateVersion, log: log)
            // Said, so that the cardholder's app does not report an activation that did not happen.
            response.alreadyActive = !activated.changed
            return response
        } catch let error as RPCError where [.unavailable, .deadlineExceeded, .cancelled].contains(error.code) {
            throw RPCError(.unavailable, "cannot reach the TSP: \(error.message); try again")
        } catch let error as RPCError {
            let reason = "the TSP refused the activation (\(error.code.protoValueName ?? "?")): \(error.message)"
            log.info("in-app activation refused by the TSP", ["session": session.id, "reason": reason])
            return await finish(session, .failure, reason: reason, log: log)
        }
    }

    /// Ends the session and tells the wallet (BANKING_APP_ACTIVATION_RESPONSE). The TSP's token is what it is even
    /// when the wallet cannot be told; the answer says so. `stateVersion` is the TSP's version of `tokenState`,
    /// passed on so that a wallet which already heard a later state of the token (a suspend through CARD_STATE)
    /// keeps that one.
    private func finish(
        _ session: AppToAppSessions.Session, _ result: WalletV1.BankingAppActivationResult, reason: String = "",
        tokenState: CardV1.TokenState = .unspecified, stateVersion: UInt64 = 0, log: Logger
    ) async -> IssuerV1.AuthorizeAppSessionResponse {
        sessions.withLock { $0.finish(session.id, result) }
        var response = IssuerV1.AuthorizeAppSessionResponse(
            digitalCardID: session.digitalCardID, result: result, reason: reason, tokenState: tokenState)
        guard let wallet else {
            response.walletError = "issuer-node was started without --wallet"
            return response
        }
        // To the wallet that opened the app only: the issuer's --wallet may be another wallet node, which was told
        // a token it does not hold. The call is then not sent, and the answer says why.
        // Within the notice limit, and a little before the served call's own deadline, so that the answer still
        // reaches the cardholder's app (a fifth of what is left, at most a second, is kept for it).
        let limit = CallOptions.answeringInTime.timeout.map { min(walletNoticeLimit, $0) } ?? walletNoticeLimit
        var options = CallOptions(timeout: limit)
        options.expectedPeer = session.walletNodeID.map { PeerIdentity(role: .wallet, nodeID: $0) }
        // What the wallet learns without this message: an activation reaches it from the TSP; a failure leaves the
        // token as it was, and the wallet's session open until the cardholder tries again.
        let meanwhile = result == .approved ? "; it hears of the token's state from the TSP" : ""
        // The TSP took all of the call's time (or the whole of it but what the answer needs): nothing is sent.
        guard limit > .zero else {
            log.warning("the wallet could not be told the in-app outcome", ["error": "the call's deadline ran out"])
            response.walletError = "the call's deadline ran out before the wallet could be told\(meanwhile)"
            return response
        }
        do {
            _ = try await WalletV1.WalletAppToApp.Client(wallet).bankingAppActivationResponse(
                WalletV1.BankingAppActivationRequest(
                    digitalCardID: session.digitalCardID, result: result, reason: reason, tokenState: tokenState,
                    sessionID: session.id, stateVersion: stateVersion),
                options: options)
            response.walletNotified = true
        } catch let error as RPCError where error.cause is UnexpectedPeer {
            let opener = session.walletNodeID ?? "?"
            log.warning(
                "the wallet that opened the app is not this issuer's --wallet; not told the in-app outcome",
                ["wallet_node": opener, "error": error.message])
            response.walletError =
                "the issuer's --wallet is not wallet node \(opener), which opened the app (\(error.message)); it "
                + "hears of the token's state from the TSP"
        } catch let error as RPCError where error.code == .deadlineExceeded {
            log.warning(
                "the wallet could not be told the in-app outcome",
                ["error": "no answer within \(Self.wholeMilliseconds(limit)) ms"])
            response.walletError = "the wallet did not answer within \(Self.wholeMilliseconds(limit)) ms\(meanwhile)"
        } catch {
            log.warning("the wallet could not be told the in-app outcome", ["error": "\(error)"])
            response.walletError = "\(error)\(meanwhile)"
        }
        return response
    }

    /// `duration` in whole milliseconds, as the wallet's answer names the limit it was given.
    static func wholeMilliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
