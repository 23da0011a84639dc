import Synchronization
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// The issuer-app sessions this wallet opened and not yet heard back about, by session id: the wallet accepts an
/// activation response only for a session it opened for that card, and only once. Kept in memory, like the app
/// switch it stands for: after a restart the cardholder opens the issuer app again.
public final class OpenedIssuerAppSessions: Sendable {
    private let sessions = Mutex<[String: String]>([:])

    public init() {}

    func opened(_ sessionID: String, digitalCardID: String) {
        sessions.withLock { $0[sessionID] = digitalCardID }
    }

    /// Takes the session if it was opened for `digitalCardID`.
    func take(_ sessionID: String, digitalCardID: String) -> Bool {
        sessions.withLock { sessions in
            guard sessions[sessionID] == digitalCardID else { return false }
            sessions[sessionID] = nil
            return true
        }
    }
}

/// In-app activation from the wallet's side: the person opens the issuer app from a card the issuer left INACTIVE
/// (the wallet sends its caller identity and the activation data of its flavour), and the issuer app answers with
/// the outcome (BANKING_APP_ACTIVATION_RESPONSE), which updates the card and tells the issuer app's listeners.
public struct WalletAppToAppService: WalletV1.WalletAppToApp.ServiceProtocol {
    let store: WalletStore
    /// The issuer app; nil when wallet-node was started without --issuer.
    let issuer: (any RPCCaller)?
    let provider: WalletProvider
    let logger: Logger
    let clock: @Sendable () -> UInt64
    let events: WalletEventHub
    /// The account of cards stored before the wallet recorded each card's account (the configured one); an event
    /// about a card names the card's own account.
    let configuredAccountID: String
    let sessions: OpenedIssuerAppSessions

    public init(
        store: WalletStore, issuer: (any RPCCaller)?, provider: WalletProvider, logger: Logger,
        clock: @escaping @Sendable () -> UInt64 = WalletNode.nowMs, events: WalletEventHub = WalletEventHub(),
        configuredAccountID: String = "", sessions: OpenedIssuerAppSessions = OpenedIssuerAppSessions()
    ) {
        self.sessions = sessions
        self.store = store
        self.issuer = issuer
        self.provider = provider
        self.logger = logger
        self.clock = clock
        self.events = events
        self.configuredAccountID = configuredAccountID
    }

    public func openIssuerApp(_ request: WalletV1.OpenIssuerAppRequest, context: ServerContext) async throws
        -> WalletV1.OpenIssuerAppResponse
    {
        try await answering {
            let card = try store.card(ref: request.cardRef)
            guard let result = card.result, !result.digitalCardID.isEmpty else {
                throw WalletError(
                    .failedPrecondition, card.noDigitalCard)
            }
            guard result.tokenState == .inactive else {
                let state = (result.tokenState.protoValueName ?? "?").replacingOccurrences(of: "TOKEN_STATE_", with: "")
                throw WalletError(
                    .failedPrecondition,
                    "\(card.cardRef) is \(state); the issuer app activates only an INACTIVE card")
            }
            guard result.idvMethods.contains(where: { $0.type == .appToApp }) else {
                // With the methods it did offer, and how to use one: the card waits for one of them.
                let offered = result.idvMethods.map { method in
                    let type = (method.type.protoValueName ?? "?").replacingOccurrences(
                        of: "IDV_METHOD_TYPE_", with: "")
                    return "\(method.id) (\(type))"
                }
                throw WalletError(
                    .failedPrecondition,
                    "the issuer offered no in-app method for \(card.cardRef)"
                        + (offered.isEmpty
                            ? "; it offered no ID&V method at all"
                            : "; it offered \(offered.joined(separator: ", ")): select one (tokenet wallet "
                                + "select-method WALLET_ADDR \(card.cardRef) METHOD_ID)"))
            }
            guard let issuer else {
                throw WalletError(
                    .failedPrecondition, "wallet-node was started without --issuer, so it cannot open the issuer app")
            }
            var opening = IssuerAppOpening.make(
                provider: provider, scheme: card.walletCard.scheme, digitalCardID: result.digitalCardID,
                panLast4: card.panLast4)
            if !request.callerOverride.isEmpty { opening.caller = request.callerOverride }
            // Only the card's own issuer app is opened: the card's reference and last four digits must not go to
            // another issuer's app, which the wallet's --issuer may be (a card of a second issuer).
            var options = CallOptions()
            if let node = card.issuerNodeID { options.expectedPeer = PeerIdentity(role: .issuer, nodeID: node) }
            let opened: IssuerV1.OpenAppResponse
            do {
                opened = try await IssuerV1.IssuerAppToApp.Client(issuer).openApp(
                    IssuerV1.OpenAppRequest(
                        caller: opening.caller, activationData: opening.activationData,
                        serialNumber: opening.serialNumber),
                    options: options)
            } catch let error as RPCError where error.unexpectedPeer != nil {
                let actual = error.unexpectedPeer?.actual.map { "\($0)" } ?? "an unidentified peer"
                throw WalletError(
                    .failedPrecondition,
                    "\(card.cardRef) is a card of the issuer node \(card.issuerNodeID ?? "?"), and this wallet's "
                        + "--issuer leads to \(actual): the wallet opens only the card's own issuer app, and sent it "
                        + "nothing; complete the card's ID&V with another method")
            } catch let error as RPCError where [.unavailable, .deadlineExceeded].contains(error.code) {
                // Not a refusal: nothing answered, and opening it again may well work.
                throw RPCError(
                    error.code, "the issuer app could not be reached: \(error.message); try again", cause: error)
            } catch let error as RPCError {
                throw RPCError(error.code, "the issuer app refused to open: \(error.message)", cause: error)
            }
            sessions.opened(opened.sessionID, digitalCardID: result.digitalCardID)
            logger.withTraceID(context.traceID).info(
                "issuer app opened", ["card_ref": card.cardRef, "caller": opening.caller, "session": opened.sessionID])
            return WalletV1.OpenIssuerAppResponse(
                card: card.walletCard, caller: opening.caller, activationData: opening.activationData,
                passSerialNumber: opening.serialNumber, sessionID: opened.sessionID, message: opened.message)
        }
    }

    public func bankingAppActivationResponse(
        _ request: WalletV1.BankingAppActivationRequest, context: ServerContext
    ) async throws -> WalletV1.BankingAppActivationAck {
        try await answering {
            guard !request.digitalCardID.isEmpty else {
                throw WalletError(.invalidArgument, "digital_card_id is required")
            }
            // Another issuer's card is as unknown to this app as a card the wallet does not hold.
            let caller = WalletEventsService.issuerNode(context)
            guard let card = try store.card(digitalCardID: request.digitalCardID, issuerNodeID: caller) else {
                throw WalletError(.notFound, "the wallet has no digital card \"\(request.digitalCardID)\"")
            }
            guard request.result == .approved || request.result == .failure else {
                throw WalletError(.invalidArgument, "result must be APPROVED or FAILURE")
            }
            guard request.result != .approved || request.tokenState != .unspecified else {
                throw WalletError(.invalidArgument, "an approved activation must carry the token's state")
            }
            guard sessions.take(request.sessionID, digitalCardID: request.digitalCardID) else {
                throw WalletError(
                    .failedPrecondition,
                    "the wallet did not open the issuer app for session \"\(request.sessionID)\" of "
                        + "\(card.cardRef), or already heard its outcome")
            }
            let log = logger.withTraceID(context.traceID)
            switch request.result {
            case .approved:
                // The issuer app's word is taken for the one change an in-app activation makes, INACTIVE to ACTIVE,
                // and only while the card is INACTIVE: the activation can reach the wallet after a later change of the
                // token (the issuer suspending it), which it must not undo. Its state version is not stored: the
                // TSP's CARD_STATE for the activation carries the TSP's own, and a version the issuer app sent could
                // otherwise outrank every later state the TSP publishes, leaving the card ACTIVE here for good.
                guard request.tokenState == .active else {
                    log.warning(
                        "the issuer app approved the activation with a state other than ACTIVE; the wallet waits for "
                            + "the TSP's",
                        ["card_ref": card.cardRef, "token_state": request.tokenState.protoValueName ?? "?"])
                    return WalletV1.BankingAppActivationAck(changed: false)
                }
                let (stored, changed) = try store.updateTokenState(
                    id: card.id, state: .active, from: .inactive, nowMs: clock())
                if changed {
                    events.publish(
                        WalletV1.WalletEvent(
                            kind: .tokenStatusChanged, walletAccountID: stored.account(configured: configuredAccountID),
                            digitalCardID: request.digitalCardID, tokenState: request.tokenState, atMs: clock()),
                        cardIssuerNodeID: stored.issuerNodeID)
                }
                log.info(
                    "the issuer app approved the activation",
                    [
                        "card_ref": card.cardRef, "token_state": request.tokenState.protoValueName ?? "?",
                        "issuer_state_version": "\(request.stateVersion)",
                    ])
                return WalletV1.BankingAppActivationAck(changed: changed)
            case .failure:
                log.info("the issuer app did not activate", ["card_ref": card.cardRef, "reason": request.reason])
                // Kept with the card, so that `cards` says why it is still INACTIVE: only the log said so.
                try store.recordActivationFailure(id: card.id, reason: request.reason, nowMs: clock())
                return WalletV1.BankingAppActivationAck(changed: false)
            case .unspecified, .unrecognized:
                return WalletV1.BankingAppActivationAck(changed: false)
            }
        }
    }
}
