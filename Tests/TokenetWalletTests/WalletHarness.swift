import Foundation
import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetWallet

/// A wallet's router served in memory, calling a `FakeTSP` served in memory, with clients for the operator (the
/// person using the wallet) and an issuer.
struct WalletHarness {
    let tsp: FakeTSP
    let store: WalletStore
    let logs = MemoryLogSink()
    let control: WalletV1.WalletControl.Client
    let idvTSP: FakeTSPIdv
    let idv: WalletV1.WalletIdv.Client
    let push: WalletV1.WalletPush.Client
    /// The push service reached as the operator, a role it refuses.
    let pushAsOperator: WalletV1.WalletPush.Client
    /// The wallet's event fan-out, and its events service reached as the issuer app.
    let events = WalletEventHub(capacity: 8)
    let issuerApp: WalletV1.WalletEvents.Client
    let selection: WalletV1.WalletSelection.Client
    /// The TSP's lifecycle API, the wallet's lifecycle service, and the wallet's handler of broker messages.
    let lifecycleTSP = FakeTSPLifecycle()
    let lifecycle: WalletV1.WalletLifecycle.Client
    let notifications: any NotificationHandler
    /// In-app activation: the person opening the issuer app, and the issuer app answering.
    let appToApp: WalletV1.WalletAppToApp.Client
    let appToAppAsIssuer: WalletV1.WalletAppToApp.Client
    /// The wallet's services, for callers of other identities (`asIssuer`).
    let router: RPCRouter

    init(
        tsp: FakeTSP? = nil, store: WalletStore? = nil, configuration: WalletConfiguration = WalletConfiguration(),
        clock: @escaping @Sendable () -> UInt64 = { 1_000_000 }, issuer: RPCRouter? = nil
    ) throws {
        let tsp = try tsp ?? FakeTSP()
        let store = try store ?? WalletStore.inMemory()
        // On a machine the whole suite loads, an in-memory call can take seconds: a payment's refill is not cut
        // short at a node's 2 s unless a test asks for it.
        var configuration = configuration
        if configuration.refillWaitAfterPayment == WalletConfiguration().refillWaitAfterPayment {
            configuration.refillWaitAfterPayment = .seconds(120)
        }
        self.tsp = tsp
        self.store = store
        var tspRouter = RPCRouter()
        tsp.register(on: &tspRouter)
        let idvTSP = FakeTSPIdv()
        idvTSP.register(on: &tspRouter)
        self.idvTSP = idvTSP
        lifecycleTSP.register(on: &tspRouter)
        let handler = Mutex<(any NotificationHandler)?>(nil)
        let tspClient = Self.serve(
            tspRouter, client: PeerIdentity(role: .wallet, nodeID: "wallet-1"),
            server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let router = try WalletNode.router(
            tsp: tspClient, store: store, configuration: configuration,
            selection: WalletSelection(store: store, configuredAccountID: configuration.walletAccountID),
            logger: Logger(node: "wallet-node", level: .debug, sink: logs), clock: clock, events: events,
            issuer: issuer.map {
                Self.serve(
                    $0, client: PeerIdentity(role: .wallet, nodeID: "wallet-1"),
                    server: PeerIdentity(role: .issuer, nodeID: "issuer-1"))
            },
            notifications: { made in handler.withLock { $0 = made } })
        notifications = handler.withLock { $0! }
        self.router = router
        let wallet = PeerIdentity(role: .wallet, nodeID: "wallet-1")
        let asOperator = Self.serve(router, client: PeerIdentity(role: .operator, nodeID: "operator-1"), server: wallet)
        control = WalletV1.WalletControl.Client(asOperator)
        idv = WalletV1.WalletIdv.Client(asOperator)
        selection = WalletV1.WalletSelection.Client(asOperator)
        lifecycle = WalletV1.WalletLifecycle.Client(asOperator)
        appToApp = WalletV1.WalletAppToApp.Client(asOperator)
        let asIssuer = Self.serve(router, client: PeerIdentity(role: .issuer, nodeID: "issuer-1"), server: wallet)
        push = WalletV1.WalletPush.Client(asIssuer)
        issuerApp = WalletV1.WalletEvents.Client(asIssuer)
        appToAppAsIssuer = WalletV1.WalletAppToApp.Client(asIssuer)
        pushAsOperator = WalletV1.WalletPush.Client(asOperator)
    }

    /// The wallet reached by the issuer app of another node than issuer-1's.
    func asIssuer(_ nodeID: String) -> RPCClient {
        Self.serve(
            router, client: PeerIdentity(role: .issuer, nodeID: nodeID),
            server: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
    }

    /// The fake TSP's provisioning and lifecycle services served in memory to wallet-1, as the wallet's components
    /// that run beside its router (the issuer resolver, the key top-ups, the check with the TSP) call them.
    func tspAsWallet() -> RPCClient {
        var router = RPCRouter()
        tsp.register(on: &router)
        lifecycleTSP.register(on: &router)
        return Self.serve(
            router, client: PeerIdentity(role: .wallet, nodeID: "wallet-1"),
            server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
    }

    static func serve(_ router: RPCRouter, client: PeerIdentity, server: PeerIdentity) -> RPCClient {
        let rpcServer = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(client: client, server: server)
        Task { await rpcServer.serve(serverEnd) }
        return RPCClient(stream: clientEnd)
    }

    static func manual(
        _ pan: String = "4111111111111111", expiry: String = "12/30", cvc: String = "123", name: String = "Ana Díaz",
        language: String = ""
    ) -> WalletV1.AddCardRequest {
        WalletV1.AddCardRequest(
            language: language,
            source: .manual(WalletV1.ManualCard(pan: pan, expiry: expiry, cvc: cvc, cardholderName: name)))
    }
}

/// Runs `body` and returns the status code it failed with, or nil when it succeeded.
func statusCode(_ body: () async throws -> some Any) async -> StatusCode? {
    do {
        _ = try await body()
        return nil
    } catch let error as RPCError {
        return error.code
    } catch {
        return .unknown
    }
}

/// Expects the body to fail with `code` and a message containing `text`.
func expectRPCError<T>(
    _ code: StatusCode, _ text: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async {
    do {
        _ = try await body()
        Issue.record("expected \(code.protoValueName ?? "") but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as RPCError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
