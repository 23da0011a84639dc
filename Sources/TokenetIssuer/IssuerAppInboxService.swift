import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.issuer.v1.IssuerAppInbox`: operators read the app's notifications and give the cardholder's answer to
/// an authentication request, which the app sends to the TSP.
struct IssuerAppInboxService: IssuerV1.IssuerAppInbox.ServiceProtocol {
    let handler: IssuerAppNotificationHandler
    /// The TSP; nil when issuer-node was started without `--tsp`.
    let tsp: (any RPCCaller)?
    let logger: Logger
    /// Where the cardholder of a card is found, to sign them in before they proceed with a payment.
    var store: IssuerStore?
    /// How the cardholder signs in to the app (the issuer app's login); nil when the app has none, and then no
    /// payment can be proceeded with.
    var login: (any CardholderLogin)?

    init(
        handler: IssuerAppNotificationHandler, tsp: (any RPCCaller)?, logger: Logger, store: IssuerStore? = nil,
        login: (any CardholderLogin)? = nil
    ) {
        self.handler = handler
        self.tsp = tsp
        self.logger = logger
        self.store = store
        self.login = login
    }

    func notifications(_ request: IssuerV1.AppNotificationsRequest, context: ServerContext) async throws
        -> IssuerV1.AppNotificationsResponse
    {
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "Notifications")
        return try await IssuerError.mapping { () throws(IssuerError) in try handler.page(page) }
    }

    func answerAuthn(_ request: IssuerV1.AppAnswerAuthnRequest, context: ServerContext) async throws
        -> IssuerV1.AppAnswerAuthnResponse
    {
        guard !request.authnRequestID.isEmpty else { throw RPCError(.invalidArgument, "authn_request_id is required") }
        do {
            _ = try handler.pendingAuthn(request.authnRequestID)
        } catch .unknown(let id) {
            throw RPCError(.notFound, "the app has no authentication request \"\(id)\"; see its notifications")
        } catch .alreadyAnswered(let id, let status) {
            throw RPCError(.failedPrecondition, "authentication request \"\(id)\" was already answered: \(status)")
        } catch .arrivedLate(let id, let expiresAtMs) {
            let at = expiresAtMs == 0 ? "" : " at \(Self.time(ms: expiresAtMs))"
            throw RPCError(
                .failedPrecondition,
                "authentication request \"\(id)\" reached the app after its expiry\(at), so the cardholder was never "
                    + "asked; the TSP refuses a late answer")
        } catch .expired(let id, let endsAtMs) {
            throw RPCError(
                .failedPrecondition,
                "authentication request \"\(id)\" expired at \(Self.time(ms: endsAtMs)) without an answer; the TSP "
                    + "refuses a late answer, so the app did not send it")
        }
        guard let tsp else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot answer the TSP")
        }
        if request.proceed { try await signIn(for: request) }
        let answer: TspV1.AnswerAuthnResponse
        do {
            answer = try await TspV1.Transactions.Client(tsp).answerAuthn(
                TspV1.AnswerAuthnRequest(authnRequestID: request.authnRequestID, proceed: request.proceed))
        } catch let error as RPCError
            where (error.code == .unavailable || error.code == .deadlineExceeded) && !error.callWasNeverSent
        {
            // The answer may have reached the TSP and only its reply been lost: the request stays PENDING here
            // until the payment's TRANSACTION_NOTIFICATION says how it ended (`IssuerAppInbox.Action.settledAuthn`).
            throw RPCError(
                error.code,
                "the TSP's AnswerAuthn failed: \(error.message); the TSP may have taken the answer: the app lists the "
                    + "request as answered once the payment's notification arrives, and answering again says how "
                    + "the TSP recorded it",
                cause: error)
        }
        do {
            try handler.answered(request.authnRequestID, status: answer.status)
        } catch {
            // The TSP recorded the answer; only the app's copy is missing, and the TSP refuses a second answer.
            logger.withTraceID(context.traceID).error(
                "the app could not keep the answer it sent; it lists the request as answered once the payment's "
                    + "notification arrives",
                ["authn_request_id": request.authnRequestID, "error": error.message])
        }
        logger.withTraceID(context.traceID).info(
            "cardholder answered an authentication request",
            [
                "authn_request_id": request.authnRequestID, "status": answer.status, "approved": "\(answer.approved)",
            ])
        return IssuerV1.AppAnswerAuthnResponse(
            authnRequestID: request.authnRequestID, status: answer.status, approved: answer.approved,
            declineReason: answer.declineReason)
    }

    /// Signs in the cardholder of the request's card with the app's PIN: proceeding authenticates the payment, which
    /// any operator of the app could otherwise do for any cardholder, the app locked or never set up. Statuses as
    /// `login` answers them (a locked app RESOURCE_EXHAUSTED, a cardholder without the app NOT_FOUND).
    private func signIn(for request: IssuerV1.AppAnswerAuthnRequest) async throws {
        guard !request.pin.isEmpty else {
            throw RPCError(
                .invalidArgument,
                "proceeding authenticates the payment: give the app's PIN (tokenet issuer-app authn … --proceed --pin "
                    + "PIN), or cancel")
        }
        guard let login, let store else {
            throw RPCError(
                .failedPrecondition,
                "this issuer app has no sign-in (no authentication service), so it cannot authenticate the payment; "
                    + "cancel it")
        }
        guard let digitalCardID = handler.card(ofAuthn: request.authnRequestID),
            let card = try await IssuerError.mapping({ () throws(IssuerError) in
                try store.card(forDigitalCardID: digitalCardID)
            }),
            let cardholder = try await IssuerError.mapping({ () throws(IssuerError) in
                try store.cardholderID(ofAccount: card.accountID)
            })
        else {
            throw RPCError(
                .failedPrecondition,
                "the app cannot tell whose card authentication request \"\(request.authnRequestID)\" is for, so it "
                    + "cannot sign the cardholder in; cancel it")
        }
        // An app acts for the accounts activated in it, as in app-to-app: one removed from it (delete-account), or
        // never activated there, does not authenticate its cards' payments, though the cardholder can still sign
        // in for the others. Checked before the PIN, which a refusal then does not spend; an app with no account
        // activated in it has nothing to check against.
        let appAccounts = try await IssuerError.mapping { () throws(IssuerError) in
            try store.appAccounts(cardholder).map(\.accountID)
        }
        if !appAccounts.isEmpty, !appAccounts.contains(card.accountID) {
            throw RPCError(
                .failedPrecondition,
                "card ending \(card.pan.last4) is of account \(card.accountID), which is not activated in "
                    + "\(cardholder)'s app, so the app cannot authenticate its payments; activate it there (tokenet "
                    + "issuer-app activate-linked), or cancel")
        }
        do {
            _ = try await login.accessToken(forUser: cardholder, pin: request.pin)
        } catch {
            throw RPCError(
                error.signInStatus,
                "the cardholder could not be signed in, so the payment is not authenticated: "
                    + error.shownInSignIn)
        }
    }

    /// A time in milliseconds since the epoch, ISO 8601 in UTC.
    static func time(ms: UInt64) -> String {
        Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601)
    }
}
