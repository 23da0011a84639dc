import Foundation
import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet.tsp.v1.Idv`: the wallet proves the cardholder for a token the issuer left INACTIVE. The TSP generates
/// each one-time code, keeps only its digest, and has the issuer deliver it; the code is never logged.
struct IdvService: TspV1.Idv.ServiceProtocol {
    let tsp: TSPService

    func selectIdvMethod(_ request: TspV1.SelectIdvMethodRequest, context: ServerContext) async throws
        -> TspV1.SelectIdvMethodResponse
    {
        try await tsp.handling("SelectIdvMethod", context) { log in
            try await tsp.expireAbandonedStepUps(traceID: context.traceID, log: log)
            let token = try requireToken(request.digitalCardID, context)
            guard !request.methodID.isEmpty else { throw TSPError(.invalidArgument, "method_id is required") }
            // The state first: a token approved outright was offered no method, and "not offered; offered: none"
            // hid that it is live already and needs no ID&V.
            guard token.state == .inactive else {
                throw TSPError(
                    .failedPrecondition,
                    "token \"\(token.digitalCardID)\" is \(token.state); ID&V is only for an INACTIVE token"
                        + (token.state == .deactivated
                            ? try TSPStore.deactivatedHint(of: token.digitalCardID, tsp.store.database.queryOne) : ""))
            }
            let methods = try tsp.store.idvMethods(of: token.digitalCardID)
            guard let method = methods.first(where: { $0.id == request.methodID }) else {
                let offered = methods.map(\.id).joined(separator: ", ")
                throw TSPError(
                    .notFound,
                    "method \"\(request.methodID)\" was not offered for token \"\(token.digitalCardID)\"; offered: "
                        + (offered.isEmpty ? "none" : offered))
            }
            var response = TspV1.SelectIdvMethodResponse(method: method)
            switch method.type {
            case .otpSms, .otpEmail:
                let code = OTPCode.generate()
                let nowMs = tsp.nowMs
                let (action, sentTo, replaced) = try await tsp.otpTurns.one(
                    token.digitalCardID, cancelled: Self.cancelledWaiting
                ) { () async throws -> (OTPStateMachine.DeliveryAction, String?, String?) in
                    let (action, previous) = try tsp.store.selectOTP(
                        digitalCardID: token.digitalCardID, methodID: method.id, candidateCode: code,
                        policy: tsp.configuration.otpPolicy, cardCodesPerDay: tsp.configuration.otpCodesPerCardPerDay,
                        nowMs: nowMs)
                    guard case .deliver(_, let expiresAtMs) = action else { return (action, nil, nil) }
                    // The method of a code still out that this one replaces (the cardholder switched methods).
                    let replaced = previous.flatMap {
                        $0.status == .pending && nowMs < $0.expiresAtMs && $0.methodID != method.id
                            ? $0.methodID : nil
                    }
                    let sentTo: String
                    do {
                        sentTo = try await deliver(
                            code, method: method, token: token, expiresAtMs: expiresAtMs,
                            retry: "select the method again",
                            ifLost: "enter it if it arrives; if none does, ask for a resend")
                        // Until this is recorded the code counts as under way (`keepUnconfirmedOTPCodes`).
                        recording("that the code was delivered", token, log) {
                            try tsp.store.otpDelivered(digitalCardID: token.digitalCardID, code: code)
                        }
                    } catch let failure as DeliveryFailure {
                        settle(failure, code: code, previous: previous, token: token, log: log)
                        throw failure.error
                    }
                    return (action, sentTo, replaced)
                }
                switch action {
                case .deliver(_, let expiresAtMs):
                    log.info("one-time code sent", ["digital_card_id": token.digitalCardID, "method": method.id])
                    response.codeSent = true
                    response.codeExpiresAtMs = expiresAtMs
                    response.triesLeft = UInt32(tsp.configuration.otpMaxAttempts)
                    var sentBy = method
                    if let sentTo { sentBy.maskedValue = sentTo }
                    response.method = sentBy
                    response.instructions = "enter the code sent to \(sentBy.maskedValue)"
                    if let replaced {
                        let before = methods.first { $0.id == replaced }.map { " to \($0.maskedValue)" } ?? ""
                        response.instructions +=
                            "; the code sent before\(before) (method \(replaced)) no longer works"
                    }
                case .alreadySent(let methodID, let expiresAtMs, let attemptsLeft, let resendsLeft):
                    // The code out went by the method first picked, which a resend uses too: the answer names that
                    // one, not the method asked now, or the wallet shows the cardholder a code on its way to an
                    // address it never went to.
                    let sentBy = methods.first { $0.id == methodID }
                    response.method = sentBy ?? method
                    response.codeExpiresAtMs = expiresAtMs
                    response.triesLeft = UInt32(attemptsLeft)
                    // The card's codes of the day used up (across its tokens and wallets), neither a resend nor
                    // another method's code can come before the next is allowed: the answer offered both.
                    let cardNextCodeAt = try tsp.store.nextCardCodeAt(
                        digitalCardID: token.digitalCardID, limit: tsp.configuration.otpCodesPerCardPerDay,
                        nowMs: tsp.nowMs)
                    // Another method asked while a code is out sends its own code unless no more can be sent, so
                    // the code out is all there is to enter then.
                    let next =
                        if let cardNextCodeAt {
                            "enter it (the card has had the most codes the TSP sends it in 24 hours: no other can be "
                                + "sent before \(cardNextCodeAt.formatted(.iso8601)))"
                        } else if resendsLeft > 0 {
                            "enter it, or ask for a resend"
                        } else {
                            "enter it (no more codes can be sent for this token)"
                        }
                    response.instructions =
                        "a code was already sent"
                        + (sentBy.map { " to \($0.maskedValue)" } ?? "") + " (method \(methodID)) and is still "
                        + "valid; " + next
                case .refused(let refusal):
                    throw TSPError(.failedPrecondition, refusal.description + Self.otherWays(refusal, methods))
                }
            case .callCenter:
                response.instructions =
                    "call the issuer (\(method.maskedValue)); after verifying the cardholder its operator "
                    + "activates the token"
            case .appToApp:
                response.instructions = "open the issuer app \(method.appIdentifier) with \(method.appAction)"
            case .unspecified, .unrecognized:
                throw TSPError(.failedPrecondition, "method \"\(method.id)\" has no type this token service knows")
            }
            return response
        }
    }

    func submitOTP(_ request: TspV1.SubmitOtpRequest, context: ServerContext) async throws -> TspV1.SubmitOtpResponse {
        try await tsp.handling("SubmitOtp", context) { log in
            try await tsp.expireAbandonedStepUps(traceID: context.traceID, log: log)
            let token = try requireToken(request.digitalCardID, context)
            guard !request.code.isEmpty else { throw TSPError(.invalidArgument, "code is required") }
            let result = try await tsp.stateChanges.run {
                try await tsp.expireAbandonedStepUpsInTurn(traceID: context.traceID, log: log)
                let before = try tsp.store.token(token.digitalCardID) ?? token
                // The wallet hears of the activation through the broker too: an answer lost on the way (a wallet
                // that crashed, a connection cut) would otherwise leave its card INACTIVE for good, since asking
                // again is refused once the code is verified. The issuer app hears of it as of the other activations.
                let journaled = try tsp.store.submitOTP(
                    digitalCardID: token.digitalCardID, code: request.code, policy: tsp.configuration.otpPolicy,
                    actor: TokenActor.wallet(node: context.peer?.nodeID), traceID: context.traceID, nowMs: tsp.nowMs,
                    announce: { after in
                        TSPService.cardState(
                            TokenStateChange(before: before, after: after), reason: "IDV_OTP", initiator: "wallet")
                    })
                return await tsp.published(journaled, log: log)
            }
            var response = TspV1.SubmitOtpResponse()
            switch result {
            case .success: response.result = .success
            case .incorrectCode(let attemptsLeft):
                response.result = .incorrectCode
                response.triesLeft = UInt32(attemptsLeft)
            case .retriesExceeded: response.result = .incorrectCodeRetriesExceeded
            case .expiredCode: response.result = .expiredCode
            case .refused(let refusal): throw TSPError(.failedPrecondition, refusal.description)
            }
            let now = try tsp.store.token(token.digitalCardID) ?? token
            response.tokenState = now.state.wire
            response.stateVersion = now.stateVersion
            log.info(
                "one-time code checked",
                [
                    "digital_card_id": token.digitalCardID,
                    "result": response.result.protoValueName ?? "\(response.result)",
                ])
            return response
        }
    }

    func resendOTP(_ request: TspV1.ResendOtpRequest, context: ServerContext) async throws -> TspV1.ResendOtpResponse {
        try await tsp.handling("ResendOtp", context) { log in
            try await tsp.expireAbandonedStepUps(traceID: context.traceID, log: log)
            let token = try requireToken(request.digitalCardID, context)
            let code = OTPCode.generate()
            let (action, sentBy) = try await tsp.otpTurns.one(token.digitalCardID, cancelled: Self.cancelledWaiting) {
                () async throws -> (OTPStateMachine.DeliveryAction, CardV1.IdvMethod?) in
                // Read before the new code is stored: a read that failed after it left a code stored as under way,
                // a resend used and nothing sent.
                let methods = try tsp.store.idvMethods(of: token.digitalCardID)
                let (action, previous) = try tsp.store.resendOTP(
                    digitalCardID: token.digitalCardID, candidateCode: code, policy: tsp.configuration.otpPolicy,
                    cardCodesPerDay: tsp.configuration.otpCodesPerCardPerDay, nowMs: tsp.nowMs)
                guard case .deliver(let methodID, let expiresAtMs) = action else { return (action, nil) }
                guard let method = methods.first(where: { $0.id == methodID }) else {
                    recording("that the code was not delivered", token, log) {
                        try tsp.store.otpDeliveryFailed(
                            digitalCardID: token.digitalCardID, code: code, previous: previous,
                            policy: tsp.configuration.otpPolicy, nowMs: tsp.nowMs)
                    }
                    throw TSPError(.internal, "the method of the code out is not among the token's; no code was sent")
                }
                var sentBy = method
                do {
                    sentBy.maskedValue = try await deliver(
                        code, method: method, token: token, expiresAtMs: expiresAtMs, retry: "ask for a resend",
                        ifLost: "enter it if it arrives, or the code sent before, which stays valid too; if neither "
                            + "arrives, ask for a resend again")
                    recording("that the code was delivered", token, log) {
                        try tsp.store.otpDelivered(digitalCardID: token.digitalCardID, code: code)
                    }
                } catch let failure as DeliveryFailure {
                    settle(failure, code: code, previous: previous, token: token, log: log)
                    throw failure.error
                }
                return (action, sentBy)
            }
            switch action {
            case .deliver(let methodID, let expiresAtMs):
                log.info("one-time code resent", ["digital_card_id": token.digitalCardID, "method": methodID])
                // The method names where the code went, as select-method's answer does: the cardholder who asked
                // for a resend was not told which address or number to watch.
                return TspV1.ResendOtpResponse(
                    codeExpiresAtMs: expiresAtMs, triesLeft: UInt32(tsp.configuration.otpMaxAttempts), method: sentBy)
            case .alreadySent:
                throw TSPError(.internal, "a resend did not replace the code")
            case .refused(let refusal):
                let methods = try tsp.store.idvMethods(of: token.digitalCardID)
                throw TSPError(.failedPrecondition, refusal.description + Self.otherWays(refusal, methods))
            }
        }
    }

    /// A call that gave up while another code of its token was on its way.
    static var cancelledWaiting: RPCError {
        RPCError(.cancelled, "the call was cancelled while another one-time code of the token was being sent")
    }

    /// For a refusal that ends one-time codes for the token, what else the cardholder can do: the other methods the
    /// issuer offered, or, when it offered none, adding the card again (the new digitization replaces this token).
    /// Without it a cardholder with OTP methods only was told to use another method there was none of.
    static func otherWays(_ refusal: OTPStateMachine.Refusal, _ methods: [CardV1.IdvMethod]) -> String {
        switch refusal {
        case .retriesExceeded, .resendsExhausted, .codesExhausted: break
        case .noCodeSent, .alreadyVerified: return ""
        }
        let others = methods.filter { $0.type != .otpSms && $0.type != .otpEmail }.map(\.id)
        guard others.isEmpty else { return " (also offered: \(others.joined(separator: ", ")))" }
        return " (the issuer offered no method but one-time codes: delete the card and add it again)"
    }

    /// The calling wallet's token. Another wallet's is refused before its state is read or a code is sent or
    /// checked: a wallet node that learnt a token's id could otherwise have the cardholder sent codes, spend the
    /// token's tries, or activate it.
    private func requireToken(_ digitalCardID: String, _ context: ServerContext) throws -> TokenRecord {
        guard !digitalCardID.isEmpty else { throw TSPError(.invalidArgument, "digital_card_id is required") }
        guard let token = try tsp.store.token(digitalCardID) else {
            throw TSPError.unknownToken(digitalCardID)
        }
        try TSPService.requireWallet(context.peer?.nodeID, owns: token)
        return token
    }

    /// A code's delivery that failed: for sure (the issuer refused, or the request never reached it), or perhaps
    /// not at all (`uncertain`: the issuer's answer was lost, and it may have sent the code).
    struct DeliveryFailure: Error {
        var error: RPCError
        var uncertain: Bool
    }

    /// Whether a failed SendOtp may have reached the issuer and been carried out: the request went out and no answer
    /// came (a deadline, a cancel, this side's connection cut). A call never sent, one the issuer's goaway says it
    /// never processed, or an answer of the issuer's own (a refusal) means no code went out.
    static func deliveryMayHaveHappened(_ error: RPCError) -> Bool {
        guard !error.callWasNeverSent, !error.callWasNotProcessed else { return false }
        return error.code == .deadlineExceeded || error.code == .cancelled || error.connectionEndedHere
    }

    /// Records how a code's delivery ended: a code that reached no one is withdrawn (selecting again sends one,
    /// instead of answering that a code is out while the cardholder waits for nothing; a code replacing another
    /// leaves that one standing with its tries, and uses up no resend); a code that may have reached the cardholder
    /// stays valid, with the one it replaced (`otpDeliveryUncertain`).
    private func settle(
        _ failure: DeliveryFailure, code: String, previous: OTPStateMachine.Challenge?, token: TokenRecord,
        log: Logger
    ) {
        if failure.uncertain {
            recording("that the code may have been delivered", token, log) {
                try tsp.store.otpDeliveryUncertain(digitalCardID: token.digitalCardID, code: code)
            }
            log.warning(
                "one-time code may have been sent: the issuer's answer was lost; it stays valid",
                ["digital_card_id": token.digitalCardID, "error": failure.error.message])
        } else {
            recording("that the code was not delivered", token, log) {
                try tsp.store.otpDeliveryFailed(
                    digitalCardID: token.digitalCardID, code: code, previous: previous,
                    policy: tsp.configuration.otpPolicy, nowMs: tsp.nowMs)
            }
        }
    }

    /// Records how a delivery went. A failure is logged with its cause and what it leaves: the code stays marked as
    /// under way until the node restarts (`keepUnconfirmedOTPCodes`), and a select meanwhile answers that a code is
    /// out. It was dropped without a word.
    private func recording(_ what: String, _ token: TokenRecord, _ log: Logger, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            log.warning(
                "could not record \(what); the code counts as under way until the TSP restarts",
                ["digital_card_id": token.digitalCardID, "error": "\(error)"])
        }
    }

    /// Has the issuer deliver a code, and returns where the issuer says it went (`SendOtpResponse.masked_destination`,
    /// a card number in it masked), or the method's destination when it says nothing. The code is already stored (as
    /// its digest); if delivery fails the error says what to `retry`, or, when the issuer's answer was lost, what to
    /// do `ifLost`.
    private func deliver(
        _ code: String, method: CardV1.IdvMethod, token: TokenRecord, expiresAtMs: UInt64, retry: String,
        ifLost: String
    ) async throws(DeliveryFailure) -> String {
        do {
            guard let issuer = try tsp.store.issuers().first(where: { $0.id == token.issuerID }) else {
                throw RPCError(.unavailable, "issuer \(token.issuerID) is no longer registered")
            }
            let answer = try await tsp.issuers.otp(for: issuer).sendOTP(
                IssuerV1.SendOtpRequest(
                    digitalCardID: token.digitalCardID, methodID: method.id, type: method.type, code: code,
                    expiresAtMs: expiresAtMs),
                options: .answeringInTime(atMost: tsp.configuration.issuerDeadline))
            return answer.maskedDestination.isEmpty ? method.maskedValue : maskPAN(answer.maskedDestination)
        } catch {
            let error = error as? RPCError ?? RPCError(.internal, "\(error)")
            let status = error.code.protoValueName ?? "\(error.code.rawValue)"
            if Self.deliveryMayHaveHappened(error) {
                throw DeliveryFailure(
                    error: RPCError(
                        .unavailable,
                        "the issuer's answer about the code was lost (\(status)): \(error.message); the code may have "
                            + "reached the cardholder: \(ifLost)"),
                    uncertain: true)
            }
            throw DeliveryFailure(
                error: RPCError(
                    .unavailable, "the issuer could not deliver the code (\(status)): \(error.message); \(retry)"),
                uncertain: false)
        }
    }
}

/// `tokenet.tsp.v1.IssuerIdv`: an issuer's call centre activates one of its own tokens after verifying the
/// cardholder.
struct IssuerIdvService: TspV1.IssuerIdv.ServiceProtocol {
    let tsp: TSPService

    func activateToken(_ request: TspV1.ActivateTokenRequest, context: ServerContext) async throws
        -> TspV1.ActivateTokenResponse
    {
        try await tsp.handling("ActivateToken", context) { log in
            try await tsp.expireAbandonedStepUps(traceID: context.traceID, log: log)
            guard !request.digitalCardID.isEmpty else {
                throw TSPError(.invalidArgument, "digital_card_id is required")
            }
            guard let token = try tsp.store.token(request.digitalCardID) else {
                throw TSPError.unknownToken(request.digitalCardID)
            }
            let nodeID = context.peer?.nodeID
            guard try tsp.store.issuers().contains(where: { $0.id == token.issuerID && $0.peerNodeID == nodeID })
            else {
                throw TSPError(
                    .permissionDenied, "token \"\(token.digitalCardID)\" belongs to another issuer's card")
            }
            let reason =
                request.reason.isEmpty ? "issuer call centre verified the cardholder" : maskPAN(request.reason)
            let change = try await tsp.stateChanges.run {
                try await tsp.expireAbandonedStepUpsInTurn(traceID: context.traceID, log: log)
                // Read again in turn: an activation that ran meanwhile has made this one a repeat, which changes
                // nothing and notifies no one.
                let before = try tsp.store.token(token.digitalCardID) ?? token
                // The wallet hears of a call-centre activation only through the broker: nothing else tells it.
                let journaled = try tsp.store.activateToken(
                    digitalCardID: token.digitalCardID, actor: TokenActor.issuer(token.issuerID), reason: reason,
                    traceID: context.traceID, nowMs: tsp.nowMs,
                    announce: { activated in
                        TSPService.cardState(
                            TokenStateChange(before: before, after: activated), reason: "IDV_CALL_CENTER",
                            initiator: "issuer")
                    })
                log.info("token activated by the issuer", ["digital_card_id": token.digitalCardID])
                return TokenStateChange(before: before, after: await tsp.published(journaled, log: log))
            }
            return TspV1.ActivateTokenResponse(
                tokenState: change.after.state.wire, changed: change.before.state != change.after.state,
                stateVersion: change.after.stateVersion)
        }
    }
}
