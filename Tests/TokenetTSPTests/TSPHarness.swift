import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// A clock tests move by hand, so expiry is tested without waiting.
final class TestClock: Sendable {
    private let date = Mutex(Date(timeIntervalSince1970: 1_795_000_000))  // November 2026
    var now: Date { date.withLock { $0 } }
    func advance(seconds: TimeInterval) { date.withLock { $0 += seconds } }
}

/// A TSP over in-memory connections: a data directory of its own, a fake issuer behind it, and clients for each
/// role.
struct TSPHarness {
    static let tspKey = try! RSAPrivateKey.generate()
    static let visa = "4111111111111111"
    static let mastercard = "5555555555554444"
    static let otherVisa = "4000056655665556"  // BIN 400005: no issuer registered it
    static let account = "account-1"
    static let device = CardV1.DeviceInfo(deviceID: "device-1", deviceType: "PHONE", deviceName: "Phone")

    let directory: String
    let clock: TestClock
    let issuer: FakeIssuer
    let logs: MemoryLogSink
    let router: RPCRouter
    let wallet: TspV1.Provisioning.Client
    let issuers: TspV1.Issuers.Client
    let control: TspV1.TspControl.Client
    let otp: FakeIssuerOTP
    let idv: TspV1.Idv.Client
    let issuerIdv: TspV1.IssuerIdv.Client
    /// Every notification the TSP published, with its queues.
    let published: RecordingPublisher

    static func make(
        configuration: TSPConfiguration = TSPHarness.configuration, directory: String? = nil,
        issuer: FakeIssuer = FakeIssuer(), clock: TestClock = TestClock(), otp: FakeIssuerOTP = FakeIssuerOTP(),
        published: RecordingPublisher = RecordingPublisher(),
        accessTokens: (any AccessTokenVerifier)? = nil,
        routes: [String: (FakeIssuer, FakeIssuerOTP)] = [:], fallback: Bool = true,
        fallbackNodeID: String = "issuer-1", routedNodeID: String = "issuer-2",
        background: BackgroundTasks? = nil, logLevel: LogLevel = .info
    ) throws -> TSPHarness {
        let directory = try directory ?? Self.temporaryDirectory()
        let keys = directory + "/keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: keys + "/card-key-current.pem") {
            try tspKey.write(toFile: keys + "/card-key-current.pem")
        }
        /// One issuer node: its decisions and its code delivery.
        func issuerNode(_ issuer: FakeIssuer, _ otp: FakeIssuerOTP, nodeID: String) -> RPCClient {
            var issuerRouter = RPCRouter()
            issuer.register(on: &issuerRouter)
            otp.register(on: &issuerRouter)
            return connect(
                issuerRouter, as: PeerIdentity(role: .tsp, nodeID: "tsp-1"),
                server: PeerIdentity(role: .issuer, nodeID: nodeID))
        }
        let issuers = IssuerDirectory(
            routes: routes.mapValues { issuerNode($0.0, $0.1, nodeID: routedNodeID) },
            fallback: fallback ? issuerNode(issuer, otp, nodeID: fallbackNodeID) : nil)
        let logs = MemoryLogSink()
        let router = try TSPNode.services(
            dataDirectory: directory, issuers: issuers, logger: Logger(node: "tsp-node", level: logLevel, sink: logs),
            configuration: configuration, now: { clock.now }, notifications: published,
            accessTokens: accessTokens, runInBackground: background.map { tasks in { tasks.run($0) } })
        return TSPHarness(
            directory: directory, clock: clock, issuer: issuer, logs: logs, router: router,
            wallet: TspV1.Provisioning.Client(connect(router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1"))),
            issuers: TspV1.Issuers.Client(connect(router, as: PeerIdentity(role: .issuer, nodeID: "issuer-1"))),
            control: TspV1.TspControl.Client(connect(router, as: PeerIdentity(role: .operator, nodeID: "op-1"))),
            otp: otp, idv: TspV1.Idv.Client(connect(router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1"))),
            issuerIdv: TspV1.IssuerIdv.Client(connect(router, as: PeerIdentity(role: .issuer, nodeID: "issuer-1"))),
            published: published)
    }

    /// The deployed policy, with a generous issuer deadline: on a loaded machine the fake issuer may take seconds to
    /// be scheduled, and tests that expect its answer must not fall back to the stand-in because of that.
    static var configuration: TSPConfiguration {
        var configuration = TSPConfiguration()
        configuration.issuerDeadline = .seconds(120)
        return configuration
    }

    /// A short issuer deadline, for tests where the issuer never answers in time.
    static var impatient: TSPConfiguration {
        var configuration = TSPConfiguration()
        configuration.issuerDeadline = .milliseconds(500)
        return configuration
    }

    static func connect(
        _ router: RPCRouter, as peer: PeerIdentity, server: PeerIdentity = PeerIdentity(role: .tsp, nodeID: "tsp-1")
    ) -> RPCClient {
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(client: peer, server: server)
        let rpcServer = RPCServer(router: router)
        Task { await rpcServer.serve(serverEnd) }
        return RPCClient(stream: clientEnd)
    }

    /// A data directory for a store or node, removed with the test process's other scratch directories.
    static func temporaryDirectory() throws -> String { try TestScratch.path("tsp") }

    // MARK: Steps

    @discardableResult
    func registerIssuer(
        id: String = "bank-a", ranges: [(String, String)] = [("411111", "411111"), ("555555", "555555")]
    ) async throws -> TspV1.RegisterIssuerResponse {
        try await issuers.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: id, displayName: "Bank A", binRanges: ranges.map { TspV1.BinRange(low: $0.0, high: $0.1) },
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
    }

    static func card(_ pan: String, month: String = "12", year: String = "2030") -> CardData {
        CardData(accountNumber: pan, expirationDate: .init(month: month, year: year), cvv2: "123")
    }

    static func encrypted(_ card: CardData, key: RSAPrivateKey = tspKey) throws -> CardV1.EncryptedCardData {
        CardV1.EncryptedCardData(
            jwe: try JWE.encrypt(card, to: key.publicKey, kid: key.kid), publicKeyIdentifier: key.kid)
    }

    func checkEligibility(
        _ instrument: TspV1.CheckEligibilityRequest.Instrument, language: String = "en-US",
        account: String = TSPHarness.account, device: CardV1.DeviceInfo = TSPHarness.device
    ) async throws -> TspV1.CheckEligibilityResponse {
        try await wallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: IdentifierRules.newID(),
                eligibilityData: TspV1.EligibilityData(language: language, inputMethod: .manual),
                walletAccountID: account, device: device, instrument: instrument))
    }

    func checkEligibility(pan: String, year: String = "2030", language: String = "en-US") async throws
        -> TspV1.CheckEligibilityResponse
    {
        try await checkEligibility(
            .encryptedCardData(try Self.encrypted(Self.card(pan, year: year))), language: language)
    }

    static let lowRisk = CardV1.WalletRiskData(accountScore: 1, deviceScore: 1, recommendation: .approve)
    static let highRisk = CardV1.WalletRiskData(accountScore: 4, deviceScore: 2, recommendation: .approve)

    func digitize(
        _ eligibility: TspV1.CheckEligibilityResponse, requestID: String = IdentifierRules.newID(),
        account: String = TSPHarness.account, device: CardV1.DeviceInfo = TSPHarness.device,
        acceptTerms: Bool = true, risk: CardV1.WalletRiskData? = TSPHarness.lowRisk, tokenRequestorID: String = "",
        tokenType: CardV1.TokenType = .unspecified
    ) async throws -> TspV1.DigitizeResponse {
        var request = TspV1.DigitizeRequest(
            requestID: requestID, eligibilityReceipt: eligibility.eligibilityReceipt, device: device,
            walletAccountID: account, risk: risk, tokenRequestorID: tokenRequestorID, tokenType: tokenType)
        if acceptTerms, case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = clock.now.unixMilliseconds
        }
        return try await wallet.digitize(request)
    }

    /// Registers the issuer and digitizes the Visa card on `count` devices (`device-0`, `device-1`, …): its ACTIVE
    /// tokens, in the order made.
    func activeTokens(_ count: Int) async throws -> [String] {
        try await registerIssuer()
        var tokens: [String] = []
        for index in 0..<count {
            let device = CardV1.DeviceInfo(deviceID: "device-\(index)", deviceType: "PHONE", deviceName: "Phone")
            let eligibility = try await checkEligibility(
                .encryptedCardData(try Self.encrypted(Self.card(Self.visa))), device: device)
            let token = try await digitize(eligibility, device: device)
            try #require(token.tokenState == .active)
            tokens.append(token.digitalCardID)
        }
        return tokens
    }

    /// An eligible Visa card, ready to digitize.
    func eligibleVisa() async throws -> TspV1.CheckEligibilityResponse {
        try await registerIssuer()
        let eligibility = try await checkEligibility(pan: Self.visa)
        try #require(eligibility.eligible)
        return eligibility
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

/// The node's background work (the journal's retry, the AUTHN expiry) for a test that wants it running, until the
/// test cancels it.
final class BackgroundTasks: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    func run(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        tasks.withLock { $0.append(task) }
    }

    func cancel() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
