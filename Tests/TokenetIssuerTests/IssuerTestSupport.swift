import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// Shared set-up: the shipped fixture, keys, an in-memory issuer, and RPC connections to routers.
enum Support {
    /// A moment before every fixture card expires.
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    static var fixturePath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/fixtures/issuer.json").path
    }

    static func fixtureJSON() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: fixturePath))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func fixture() throws -> IssuerFixture { try IssuerFixture.load(path: fixturePath) }

    /// The security code of the fixture's card `pan`: a card typed in without it is stepped up, not approved.
    static func cvc(of pan: String) throws -> String? {
        try fixture().cards.first { $0.pan == pan }?.cvc
    }

    /// RSA key generation is slow; the keys are made once per test run.
    static let keys = Result { () throws(CardError) in
        (issuer: try RSAPrivateKey.generate(), tsp: try RSAPrivateKey.generate())
    }

    static func issuerKey() throws -> RSAPrivateKey { try keys.get().issuer }
    static func tspKey() throws -> RSAPrivateKey { try keys.get().tsp }

    /// An in-memory store loaded with the shipped fixture.
    static func store() throws -> IssuerStore {
        let store = try IssuerStore(
            database: try Database.openInMemory(), vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        try store.importFixture(try fixture())
        return store
    }

    static func logger(_ sink: MemoryLogSink = MemoryLogSink()) -> Logger {
        Logger(node: "issuer-node", level: .trace, sink: sink)
    }

    static func party(
        tsp: (any RPCCaller)? = nil, wallet: (any RPCCaller)? = nil, sink: MemoryLogSink = MemoryLogSink(),
        login: (any CardholderLogin)? = nil
    ) throws -> IssuerParty {
        IssuerParty(
            store: try store(), key: try issuerKey(), tsp: tsp, wallet: wallet, logger: logger(sink),
            registrationTimeout: nil, now: { now }, login: login)
    }

    /// An issuer whose TSP is a fake that records lifecycle calls, and an operator's client of its card care.
    static func cardCare(sink: MemoryLogSink) throws -> (
        tsp: FakeLifecycleTSP, party: IssuerParty, care: IssuerV1.IssuerCardCare.Client
    ) {
        let tsp = FakeLifecycleTSP(key: try tspKey())
        let party = try party(tsp: connect(tsp.router(with: FakeTSP(key: try tspKey())), as: .issuer), sink: sink)
        var router = RPCRouter()
        party.cardCare.register(on: &router)
        return (tsp, party, IssuerV1.IssuerCardCare.Client(connect(router, as: .operator)))
    }

    /// A client calling `router` as `role`, over an in-memory connection.
    static func connect(
        _ router: RPCRouter, as role: PeerRole, nodeID: String? = nil,
        server identity: PeerIdentity = PeerIdentity(role: .issuer, nodeID: "issuer-1")
    ) -> RPCClient {
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: role, nodeID: nodeID ?? "\(role)-1"), server: identity)
        Task { await server.serve(serverEnd) }
        return RPCClient(stream: clientEnd)
    }

    static func router(_ party: IssuerParty) -> RPCRouter {
        var router = RPCRouter()
        party.decisions.register(on: &router)
        party.control.register(on: &router)
        return router
    }

    /// Card data as the TSP sends it: encrypted to the issuer's key.
    static func encrypted(
        _ pan: String, expiry: String, cvv2: String? = nil, to key: RSAPrivateKey
    ) throws -> CardV1.EncryptedCardData {
        let card = CardData(pan: try PAN(pan), expiry: try CardExpiry(parsing: expiry), cvv2: cvv2)
        return CardV1.EncryptedCardData(
            jwe: try JWE.encrypt(card, to: key.publicKey, kid: key.kid), publicKeyIdentifier: key.kid)
    }

    static func rpcError(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            Issue.record("expected an RPCError, got \(error)")
            return nil
        }
    }
}

/// The fixture's cards, by what each exercises.
enum Cards {
    static let visaApprove = ("card-visa-approve", "4761000010000009", "12/29")
    static let mcReceipt = ("card-mc-receipt", "5400000010000037", "06/30")
    static let visaSession = ("card-visa-session", "4761000020000023", "09/29")
    static let mcDecline = ("card-mc-decline", "2223000010000047", "03/30")
    static let visaStepUp = ("card-visa-stepup", "4761000030000054", "11/29")
    static let mcScore = ("card-mc-score", "5400000020000068", "08/30")
    static let visaNotEligible = ("card-visa-not-eligible", "4761000040000078", "05/29")
    static let mcStepUpApp = ("card-mc-stepup-app", "5400000030000074", "04/30")
    static let visaStandIn = ("card-visa-standin", "4761000010000082", "11/30")
    static let all = [
        visaApprove, mcReceipt, visaSession, mcDecline, visaStepUp, mcScore, visaNotEligible, mcStepUpApp,
        visaStandIn,
    ]
}

/// A TSP that records what the issuer sends and answers like the real one would.
final class FakeTSP: TspV1.Issuers.ServiceProtocol {
    struct State {
        var registrations: [TspV1.RegisterIssuerRequest] = []
        /// The trace id of each RegisterIssuer call recorded.
        var registrationTraces: [String] = []
        var receiptCards: [CardData] = []
        var receiptAccounts: [String] = []
        var receiptWalletNodes: [String] = []
        /// When set, CreatePushReceipt fails with it.
        var refusal: RPCError?
        /// When set, RegisterIssuer fails with it (and records nothing).
        var registrationRefusal: RPCError?
        /// CreatePushReceipt answers nothing for a minute, as a TSP that hangs.
        var hangReceipts = false
    }

    let key: RSAPrivateKey
    let state = Mutex(State())

    init(key: RSAPrivateKey) {
        self.key = key
    }

    func registerIssuer(
        _ request: TspV1.RegisterIssuerRequest, context: ServerContext
    ) async throws -> TspV1.RegisterIssuerResponse {
        try state.withLock { state in
            if let refusal = state.registrationRefusal { throw refusal }
            state.registrations.append(request)
            state.registrationTraces.append(context.traceID)
        }
        return TspV1.RegisterIssuerResponse(tspPublicKeyIdentifier: key.kid, tspPublicKeyPem: try key.publicKey.pem())
    }

    func createPushReceipt(
        _ request: TspV1.CreatePushReceiptRequest, context: ServerContext
    ) async throws -> TspV1.CreatePushReceiptResponse {
        if state.withLock({ $0.hangReceipts }) { try await Task.sleep(for: .seconds(60)) }
        let jwe = request.encryptedCardData?.jwe ?? ""
        let card = try CardData(json: try JWE.decrypt(jwe, with: key))
        let refusal = state.withLock { state in
            state.receiptCards.append(card)
            state.receiptAccounts.append(request.walletAccountID)
            state.receiptWalletNodes.append(request.walletNodeID)
            return state.refusal
        }
        if let refusal { throw refusal }
        guard try card.pan().scheme == .mastercard else {
            throw RPCError(.failedPrecondition, "push receipts are for Mastercard cards only (MDES Token Connect)")
        }
        return TspV1.CreatePushReceiptResponse(
            scheme: .mastercard, payload: "receipt-1", expiresAtMs: 1_790_000_600_000)
    }

    var router: RPCRouter {
        var router = RPCRouter()
        register(on: &router)
        return router
    }
}

/// A wallet backend that decrypts pushed card data with the TSP's key, as the TSP later will.
final class FakeWallet: WalletV1.WalletPush.ServiceProtocol {
    let tspKey: RSAPrivateKey
    let pushed = Mutex<[(CardData, String)]>([])
    /// When set, PushCardData fails with it.
    let refusal = Mutex<RPCError?>(nil)

    init(tspKey: RSAPrivateKey) {
        self.tspKey = tspKey
    }

    func pushCardData(
        _ request: WalletV1.PushCardDataRequest, context: ServerContext
    ) async throws -> WalletV1.PushCardDataResponse {
        if let refusal = refusal.withLock({ $0 }) { throw refusal }
        let card = try CardData(json: try JWE.decrypt(request.encryptedCardData?.jwe ?? "", with: tspKey))
        pushed.withLock { $0.append((card, request.walletAccountID)) }
        return WalletV1.PushCardDataResponse(pushSessionID: "push-session-1", expiresAtMs: 1_790_000_600_000)
    }

    var router: RPCRouter {
        var router = RPCRouter()
        register(on: &router)
        return router
    }
}
