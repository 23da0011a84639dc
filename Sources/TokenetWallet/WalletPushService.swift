import TokenetNode
import TokenetRPC
import TokenetWire

/// The wallet provider's backend for issuers: card data an issuer pushes becomes a TSP push session, whose id the
/// wallet app later adds the card with.
public struct WalletPushService: WalletV1.WalletPush.ServiceProtocol {
    let tsp: TSPCalls
    let configuration: WalletConfiguration
    let logger: Logger

    public init(tsp: any RPCCaller, configuration: WalletConfiguration, logger: Logger) {
        self.tsp = TSPCalls(tsp)
        self.configuration = configuration
        self.logger = logger
    }

    public func pushCardData(_ request: WalletV1.PushCardDataRequest, context: ServerContext) async throws
        -> WalletV1.PushCardDataResponse
    {
        try await answering {
            guard let data = request.encryptedCardData, !data.jwe.isEmpty else {
                throw WalletError(.invalidArgument, "PushCardData needs card data encrypted to the TSP's key")
            }
            let account = request.walletAccountID.isEmpty ? configuration.walletAccountID : request.walletAccountID
            guard account == configuration.walletAccountID else {
                throw WalletError(
                    .notFound,
                    "this wallet has no account \(account); it serves \(configuration.walletAccountID)")
            }
            let session = try await tsp.createPushSession(
                TspV1.CreatePushSessionRequest(encryptedCardData: data, walletAccountID: account))
            logger.withTraceID(context.traceID).info(
                "push session created", ["issuer": context.peer?.uri ?? "?", "wallet_account": account])
            return WalletV1.PushCardDataResponse(
                pushSessionID: session.pushSessionID, expiresAtMs: session.expiresAtMs)
        }
    }
}
