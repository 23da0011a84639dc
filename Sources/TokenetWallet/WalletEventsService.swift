import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// The issuer app's view into the wallet: `Listen` streams the wallet's state changes as they happen and
/// `CurrentTokens` gives the token states now, which the app pulls when it starts because only a running app hears
/// events. Each issuer app, known by the node id of its certificate, sees only the cards of its own issuer (the
/// node the TSP named at digitization): a wallet holds many banks' cards, and one bank's app has no business with
/// another's.
public struct WalletEventsService: WalletV1.WalletEvents.ServiceProtocol {
    let hub: WalletEventHub
    let store: WalletStore
    let selection: WalletSelection
    let logger: Logger
    /// Told when an app asks, so that cards still waiting for their issuer are asked about at once.
    let issuerResolution: IssuerResolutionWakeup?

    public init(
        hub: WalletEventHub, store: WalletStore, selection: WalletSelection, logger: Logger,
        issuerResolution: IssuerResolutionWakeup? = nil
    ) {
        self.issuerResolution = issuerResolution
        self.hub = hub
        self.store = store
        self.selection = selection
        self.logger = logger
    }

    public func listen(
        _ request: WalletV1.ListenRequest, responses: ResponseWriter<WalletV1.WalletEvent>, context: ServerContext
    ) async throws {
        let subscription = hub.subscribe(as: .issuerApp(nodeID: Self.issuerNode(context)))
        issuerResolution?.issuerAppAsked()
        let log = logger.withTraceID(context.traceID)
        log.info("listener opened", ["listener": "\(subscription.id)", "peer": context.peer?.nodeID ?? "plaintext"])
        for await event in subscription.events {
            try await responses.send(event)
        }
        if hub.wasDropped(subscription.id) {
            log.warning(
                "listener dropped", ["listener": "\(subscription.id)", "peer": context.peer?.nodeID ?? "plaintext"])
            throw RPCError(
                .resourceExhausted,
                "the listener fell \(hub.capacity) events behind and was dropped; listen again and pull CurrentTokens")
        }
    }

    public func currentTokens(_ request: WalletV1.CurrentTokensRequest, context: ServerContext) async throws
        -> WalletV1.CurrentTokensResponse
    {
        issuerResolution?.issuerAppAsked()
        return try await answering {
            let caller = Self.issuerNode(context)
            let page = try PageRequest(size: request.pageSize, token: request.pageToken, call: "CurrentTokens")
            let cards = try store.issuerCardPage(
                issuerNodeID: caller, afterRow: try page.afterRow(call: "CurrentTokens"), limit: page.size + 1)
            let (listed, next) = page.split(cards) { PageRequest.key(row: $0.id) }
            let tokens = listed.compactMap { card -> WalletV1.TokenStatus? in
                guard let result = card.result, !result.digitalCardID.isEmpty, card.belongs(toIssuerNode: caller)
                else { return nil }
                return WalletV1.TokenStatus(
                    digitalCardID: result.digitalCardID, tokenState: result.tokenState,
                    passSerialNumber: WalletPass.serialNumber(of: result.digitalCardID), panLast4: card.panLast4)
            }
            // The selection, named as SELECTED_CARD_CHANGED names it: only to the app of the card's own issuer.
            let selectedRef = try selection.selectedCardRef()
            let selected = selectedRef.isEmpty ? nil : try store.card(ref: selectedRef)
            let selectedID =
                selected.flatMap { $0.belongs(toIssuerNode: caller) ? $0.result?.digitalCardID : nil } ?? ""
            return WalletV1.CurrentTokensResponse(
                walletAccountID: selection.activeWalletAccountID, tokens: tokens, nextPageToken: next,
                selectedDigitalCardID: selectedID)
        }
    }

    /// The calling issuer app's node id. The methods are for the issuer role only, so the caller has a certificate;
    /// were it ever reached without one, the empty id owns no card.
    static func issuerNode(_ context: ServerContext) -> String {
        context.peer?.role == .issuer ? context.peer?.nodeID ?? "" : ""
    }
}
