import TokenetNode
import TokenetRPC
import TokenetWire

/// The wallet provider's backend for issuers: card data an issuer pushes becomes a TSP push session, whose id the
/// wallet app later adds the card with. A push that names no account goes to the active account, the one add-card
/// redeems sessions for; a push may name any of the wallet's accounts (the configured one, or one the person has
/// made active).
public struct WalletPushService: WalletV1.WalletPush.ServiceProtocol {
    let tsp: TSPCalls
    let selection: WalletSelection
    let logger: Logger

    public init(tsp: any RPCCaller, selection: WalletSelection, logger: Logger) {
        self.tsp = TSPCalls(tsp)
        self.selection = selection
        self.logger = logger
    }

    public func pushCardData(_ request: WalletV1.PushCardDataRequest, context: ServerContext) async throws
        -> WalletV1.PushCardDataResponse
    {
        try await answering {
            guard let data = request.encryptedCardData, !data.jwe.isEmpty else {
                throw WalletError(.invalidArgument, "PushCardData needs card data encrypted to the TSP's key")
            }
            let account = request.walletAccountID.isEmpty ? selection.activeWalletAccountID : request.walletAccountID
            // The wallet's other accounts are not named: they are its users', and any issuer may call this.
            guard try selection.accounts().contains(account) else {
                throw WalletError(
                    .notFound,
                    "this wallet has no account \(account) (the person makes an account the wallet's with "
                        + "tokenet wallet use-account; the wallet's own listener events name the active one)")
            }
            // The pushing node, from its certificate: the TSP checks the card is its issuer's.
            let pusher = context.peer?.role == .issuer ? context.peer?.nodeID ?? "" : ""
            let session = try await tsp.createPushSession(
                TspV1.CreatePushSessionRequest(
                    encryptedCardData: data, walletAccountID: account, pushingIssuerNodeID: pusher))
            logger.withTraceID(context.traceID).info(
                "push session created", ["issuer": context.peer?.uri ?? "?", "wallet_account": account])
            return WalletV1.PushCardDataResponse(
                pushSessionID: session.pushSessionID, expiresAtMs: session.expiresAtMs)
        }
    }
}
