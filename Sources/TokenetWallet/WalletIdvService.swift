import TokenetNode
import TokenetRPC
import TokenetWire

/// ID&V in the wallet app: the cardholder picks one of the methods the TSP listed for a card the issuer left
/// INACTIVE, then enters the code it received. Each call goes to the TSP; the wallet keeps the token state the TSP
/// reports. The code is passed through, never logged or stored.
public struct WalletIdvService: WalletV1.WalletIdv.ServiceProtocol {
    let tsp: TspV1.Idv.Client
    let store: WalletStore
    let logger: Logger
    let clock: @Sendable () -> UInt64
    let events: WalletEventHub
    /// The account of cards stored before the wallet recorded each card's account (the configured one); an event
    /// about a card names the card's own account.
    let configuredAccountID: String

    public init(
        tsp: any RPCCaller, store: WalletStore, logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs,
        events: WalletEventHub = WalletEventHub(), configuredAccountID: String = ""
    ) {
        self.events = events
        self.configuredAccountID = configuredAccountID
        self.tsp = TspV1.Idv.Client(tsp)
        self.store = store
        self.logger = logger
        self.clock = clock
    }

    public func selectIdvMethod(_ request: WalletV1.WalletSelectIdvMethodRequest, context: ServerContext)
        async throws -> WalletV1.WalletSelectIdvMethodResponse
    {
        try await answering {
            let (card, digitalCardID) = try digitalCard(request.cardRef)
            guard !request.methodID.isEmpty else { throw WalletError(.invalidArgument, "method_id is required") }
            let select = {
                try await calling("SelectIdvMethod") {
                    try await tsp.selectIdvMethod(
                        TspV1.SelectIdvMethodRequest(digitalCardID: digitalCardID, methodID: request.methodID),
                        options: .answeringInTime)
                }
            }
            // Only the one-time code methods send anything; the app-to-app and call-centre ones are chosen alone.
            let sendsACode = card.result?.idvMethods.contains {
                $0.id == request.methodID && [.otpSms, .otpEmail].contains($0.type)
            }
            let answer =
                sendsACode == true
                ? try await codeMayHaveBeenSent(again: "select the method again", select)
                : try await select()
            logger.withTraceID(context.traceID).info(
                "ID&V method selected",
                ["card_ref": card.cardRef, "method": request.methodID, "code_sent": "\(answer.codeSent)"])
            return WalletV1.WalletSelectIdvMethodResponse(
                card: card.walletCard, method: answer.method, codeSent: answer.codeSent,
                codeExpiresAtMs: answer.codeExpiresAtMs, triesLeft: answer.triesLeft,
                instructions: answer.instructions)
        }
    }

    public func submitOTP(_ request: WalletV1.WalletSubmitOtpRequest, context: ServerContext) async throws
        -> WalletV1.WalletSubmitOtpResponse
    {
        try await answering {
            let (card, digitalCardID) = try digitalCard(request.cardRef)
            guard !request.code.isEmpty else { throw WalletError(.invalidArgument, "code is required") }
            let answer: TspV1.SubmitOtpResponse
            do {
                answer = try await calling("SubmitOtp") {
                    try await tsp.submitOTP(
                        TspV1.SubmitOtpRequest(digitalCardID: digitalCardID, code: request.code),
                        options: .answeringInTime)
                }
            } catch let error as RPCError
                where (error.code == .unavailable || error.code == .deadlineExceeded)
                && !WalletControlService.neverSent(error)
            {
                // The code may have reached the TSP and only its answer been lost: the bare connection error said
                // nothing of what to do, and the retry's "token … is ACTIVE" then read as a failure.
                throw RPCError(
                    error.code,
                    "\(error.message); the TSP may have taken the code: submit it again, and if the TSP answers that "
                        + "the token is ACTIVE, the code was taken (the wallet hears of it from the TSP too)",
                    cause: error)
            }
            // A state no token can be in (a TSP of a newer protocol) is left out, as everywhere the wallet hears one:
            // the card showed "?".
            let (stored, changed) =
                !WalletTokenUpdates.isKnown(answer.tokenState)
                ? (card, false)
                : try store.updateTokenState(
                    id: card.id, state: answer.tokenState, version: answer.stateVersion, nowMs: clock())
            if changed, let state = stored.result?.tokenState {
                events.publish(
                    WalletV1.WalletEvent(
                        kind: .tokenStatusChanged, walletAccountID: stored.account(configured: configuredAccountID),
                        digitalCardID: digitalCardID,
                        tokenState: state, atMs: clock()),
                    cardIssuerNodeID: stored.issuerNodeID)
            }
            logger.withTraceID(context.traceID).info(
                "one-time code submitted",
                [
                    "card_ref": card.cardRef, "result": answer.result.protoValueName ?? "?",
                    "token_state": answer.tokenState.protoValueName ?? "?",
                ])
            return WalletV1.WalletSubmitOtpResponse(
                card: stored.walletCard, result: answer.result, triesLeft: answer.triesLeft)
        }
    }

    public func resendOTP(_ request: WalletV1.WalletResendOtpRequest, context: ServerContext) async throws
        -> WalletV1.WalletResendOtpResponse
    {
        try await answering {
            let (card, digitalCardID) = try digitalCard(request.cardRef)
            let answer = try await codeMayHaveBeenSent(again: "run resend-otp \(card.cardRef) again") {
                try await calling("ResendOtp") {
                    try await tsp.resendOTP(
                        TspV1.ResendOtpRequest(digitalCardID: digitalCardID), options: .answeringInTime)
                }
            }
            logger.withTraceID(context.traceID).info("one-time code resent", ["card_ref": card.cardRef])
            return WalletV1.WalletResendOtpResponse(
                card: card.walletCard, codeExpiresAtMs: answer.codeExpiresAtMs, triesLeft: answer.triesLeft,
                method: answer.method)
        }
    }

    /// `body`, a call that may have the TSP send a one-time code, with what to do when its answer was lost: the
    /// code may be on its way (the bare connection error of a TSP that went away said nothing of it), and asking
    /// again at once would send another.
    private func codeMayHaveBeenSent<T>(again: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError where Self.answerWasLost(error) {
            throw RPCError(
                error.code,
                "\(error.message); the TSP may have sent a code all the same: submit the code that arrives, and if "
                    + "none does, \(again)", cause: error)
        }
    }

    /// Whether the TSP's answer was lost on the way (its connection lost, the call's deadline passed with the call
    /// sent), rather than given: the TSP's own answers (the issuer could not deliver the code) say what to do.
    static func answerWasLost(_ error: RPCError) -> Bool {
        guard !WalletControlService.neverSent(error) else { return false }
        let lost = (error.cause as? RPCError) ?? error
        return lost.message.hasPrefix("connection lost")
            || lost.message.hasPrefix("the call did not finish within its deadline")
    }

    /// The card and its digital card id; ID&V needs a card the TSP digitized.
    private func digitalCard(_ ref: String) throws(WalletError) -> (WalletCardRecord, String) {
        let card = try store.card(ref: ref)
        guard let id = card.result?.digitalCardID, !id.isEmpty else {
            throw WalletError(
                .failedPrecondition, card.noDigitalCard)
        }
        return (card, id)
    }

    /// Keeps the TSP's status code and says who answered, with the wallet's card reference beside each of its tokens
    /// the TSP names: "verify token \"DWSP…\" instead" left the person, who works with card references, to find
    /// which card that was.
    private func calling<T>(_ method: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError {
            throw RPCError(error.code, "the TSP's \(method) failed: \(namingCards(error.message))", cause: error)
        }
    }

    /// `message` with ` (card-N)` after each quoted digital card id of a card this wallet holds.
    private func namingCards(_ message: String) -> String {
        guard message.contains("\""), let cards = try? store.allCards() else { return message }
        var named = message
        for card in cards {
            guard let id = card.result?.digitalCardID, !id.isEmpty, named.contains("\"\(id)\"") else { continue }
            named = named.replacingOccurrences(of: "\"\(id)\"", with: "\"\(id)\" (\(card.cardRef))")
        }
        return named
    }
}
