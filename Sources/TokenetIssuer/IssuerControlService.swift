import Foundation
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

/// Operator actions at the issuer: list its cards (masked), push one to a wallet, and check its tokens with the TSP.
struct IssuerControlService: IssuerV1.IssuerControl.ServiceProtocol {
    /// The wording the TSP uses too, so an operator sees the same refusal whichever side refuses.
    static let receiptSchemeRefusal = "push receipts are for Mastercard cards only (MDES Token Connect)"

    let store: IssuerStore
    let tsp: TSPLink
    /// The wallet provider's backend; nil when issuer-node was started without `--wallet`.
    let wallet: (any RPCCaller)?
    let tokenSync: IssuerTokenSync
    let logger: Logger
    let now: @Sendable () -> Date

    func listCards(
        _ request: IssuerV1.ListCardsRequest, context: ServerContext
    ) async throws -> IssuerV1.ListCardsResponse {
        let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "ListCards")
        let (cards, next) = page.split(try store.cards(after: page.after, limit: page.size + 1), key: \.id)
        return IssuerV1.ListCardsResponse(
            cards: try cards.map { card throws(IssuerError) in
                IssuerV1.IssuerCard(
                    cardID: card.id, maskedPAN: card.pan.masked, scheme: card.pan.scheme.wire,
                    expiry: card.expiry.description, cardholderName: card.cardholderName,
                    accountID: card.accountID, digitizationRule: card.rule.summary,
                    pendingRenewal: card.pendingRenewal.map { pending in
                        IssuerV1.PendingCardRenewal(
                            maskedPAN: pending.renewal.pan.masked, expiry: pending.renewal.expiry.description,
                            sinceMs: UInt64(max(0, pending.since.timeIntervalSince1970 * 1000)))
                    }, digitalCardIds: try store.tokens(ofCard: card.id).live,
                    notEligibleReason: card.notEligibleReason ?? "", blockedReason: card.blockedReason ?? "",
                    pendingTokenChange: card.pendingTokenChange?.message)
            },
            nextPageToken: next)
    }

    func syncWithTsp(_ request: IssuerV1.IssuerSyncWithTspRequest, context: ServerContext) async throws
        -> IssuerV1.IssuerSyncWithTspResponse
    {
        let summary = try await tokenSync.check()
        return IssuerV1.IssuerSyncWithTspResponse(
            tokensChecked: UInt32(clamping: summary.listed), standInRecorded: UInt32(clamping: summary.standIn),
            deletedRecorded: UInt32(clamping: summary.deleted),
            tokenChangesSettled: UInt32(clamping: summary.tokenChangesSettled),
            tokenChangesPending: UInt32(clamping: summary.tokenChangesPending))
    }

    func pushCard(_ request: IssuerV1.PushCardRequest, context: ServerContext) async throws -> IssuerV1.PushCardResponse
    {
        guard !request.cardID.isEmpty else { throw RPCError(.invalidArgument, "card_id is required") }
        guard let card = try store.card(id: request.cardID) else {
            throw RPCError(
                .notFound,
                "the issuer has no card \"\(request.cardID)\"; ListCards shows its cards (tokenet issuer cards)")
        }
        if let blocked = card.blockedRefusal {
            throw RPCError(
                .failedPrecondition,
                "\(blocked): it is not pushed to wallets; open it first (tokenet issuer unblock-card)")
        }
        let log = logger.withTraceID(context.traceID)
        switch request.mode {
        case .receipt:
            guard card.pan.scheme == .mastercard else {
                throw RPCError(
                    .failedPrecondition,
                    "\(Self.receiptSchemeRefusal); card \(card.id) is \(card.pan.scheme); push it in session mode "
                        + "(PUSH_MODE_SESSION; tokenet issuer push-card ISSUER_ADDR \(card.id) --mode session)")
            }
            let response = try await forwarding("the TSP") {
                try await tsp.pushing { key in
                    do {
                        return try await TspV1.Issuers.Client(tspCaller()).createPushReceipt(
                            TspV1.CreatePushReceiptRequest(
                                encryptedCardData: try encryptForTSP(card, to: key),
                                walletAccountID: request.walletAccountID, walletNodeID: request.walletNodeID),
                            options: .answeringInTime)
                    } catch let error as RPCError where error.code == .deadlineExceeded && !error.callWasNeverSent {
                        // Said before the operator's own deadline, where a bare "the deadline passed" came back.
                        throw RPCError(
                            .deadlineExceeded,
                            "the TSP did not answer CreatePushReceipt within this call's deadline; it may have made "
                                + "the receipt all the same: push the card again (a receipt that is not used expires)",
                            cause: error)
                    }
                }
            }
            try store.recordPush(
                cardID: card.id, mode: "RECEIPT", walletAccountID: request.walletAccountID, outcome: "receipt",
                at: now())
            log.info("push receipt created", ["card": card.id, "expires_at_ms": "\(response.expiresAtMs)"])
            return IssuerV1.PushCardResponse(
                result: .receipt(
                    IssuerV1.PushReceipt(
                        scheme: response.scheme, payload: response.payload, expiresAtMs: response.expiresAtMs)))
        case .session:
            guard request.walletNodeID.isEmpty else {
                throw RPCError(
                    .invalidArgument,
                    "wallet_node_id is for PUSH_MODE_RECEIPT: a push session is the wallet node's the issuer pushes "
                        + "it to (its --wallet)")
            }
            guard let wallet else {
                throw RPCError(
                    .failedPrecondition,
                    "issuer-node was started without --wallet, so it cannot push cards to the wallet backend")
            }
            // Only the wallet backend's answer is said as its own: the TSP's key, which this node looks up first (an
            // issuer not registered with the TSP yet, a TSP down), came back as "the wallet backend answered: …"
            // when no wallet was running.
            let response = try await tsp.pushing { key in
                let data = try encryptForTSP(card, to: key)
                return try await forwarding("the wallet backend", sayingWhose: true) {
                    try await WalletV1.WalletPush.Client(wallet).pushCardData(
                        WalletV1.PushCardDataRequest(encryptedCardData: data, walletAccountID: request.walletAccountID))
                }
            }
            guard !response.pushSessionID.isEmpty else {
                throw RPCError(.internal, "the wallet backend answered without a push session id")
            }
            try store.recordPush(
                cardID: card.id, mode: "SESSION", walletAccountID: request.walletAccountID, outcome: "session",
                at: now())
            log.info("card pushed to the wallet backend", ["card": card.id])
            return IssuerV1.PushCardResponse(result: .pushSessionID(response.pushSessionID))
        default:
            throw RPCError(.invalidArgument, "mode must be PUSH_MODE_RECEIPT or PUSH_MODE_SESSION")
        }
    }

    private func tspCaller() throws -> any RPCCaller {
        guard let caller = tsp.caller else {
            throw RPCError(.failedPrecondition, "issuer-node was started without --tsp, so it cannot reach the TSP")
        }
        return caller
    }

    /// The card as a JWE to the TSP's `key` (also what the wallet backend forwards to the TSP).
    private func encryptForTSP(_ card: StoredCard, to key: RSAPublicKey) throws -> CardV1.EncryptedCardData {
        let data = CardData(pan: card.pan, expiry: card.expiry, cvv2: card.cvc, name: card.cardholderName)
        do {
            return CardV1.EncryptedCardData(
                jwe: try JWE.encrypt(data, to: key, kid: key.kid), publicKeyIdentifier: key.kid)
        } catch {
            throw RPCError(.internal, "cannot encrypt the card data to the TSP's key: \(error.message)")
        }
    }

    /// Passes a peer's status through unchanged (its message is meant for the operator) and turns anything else
    /// into UNAVAILABLE naming the peer.
    /// With `sayingWhose`, the peer's own answer is said as its: the wallet backend's, which names links of the
    /// wallet's ("cannot connect to the tsp-node at … (--tsp)", the wallet's --tsp), read as this node's own, whose
    /// --tsp is another address. The TSP's answers pass unchanged: it is this node's own peer.
    private func forwarding<T>(
        _ peer: String, sayingWhose: Bool = false, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError {
            // A peer that refused the call as it began to stop: said as the peer's, since the issuer answering the
            // operator is running ("the node is shutting down" read as the issuer's own).
            if error.callWasNotProcessed {
                throw RPCError(
                    .unavailable,
                    "\(peer) is shutting down and did not take the push, so nothing was done: try again once it is back",
                    cause: error)
            }
            let thisSide =
                error.connectionEndedHere || error.callWasNeverSent || error.callWasNotProcessed
                || error.unexpectedPeer != nil || [.deadlineExceeded, .cancelled].contains(error.code)
            guard sayingWhose, !thisSide else { throw error }
            throw RPCError(error.code, "\(peer) answered: \(error.message)", details: error.details, cause: error)
        } catch {
            throw RPCError(.unavailable, "cannot reach \(peer): \(error)")
        }
    }
}

extension CardScheme {
    var wire: CardV1.CardScheme {
        switch self {
        case .visa: return .visa
        case .mastercard: return .mastercard
        case .other: return .unspecified
        }
    }
}
