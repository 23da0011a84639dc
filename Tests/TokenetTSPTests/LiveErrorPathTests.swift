import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Every error of eligibility and digitization, asked of the built `tsp-node` process over mutual TLS (as the wallet,
/// and as the issuer for registration and push receipts), with a fake issuer behind it.
@Suite(.serialized) struct LiveErrorPathTests {
    typealias Node = LiveNodeTests.Node

    struct Cluster {
        let loop: EventLoop
        let node: Node
        let wallet: TspV1.Provisioning.Client
        let issuers: TspV1.Issuers.Client
        let key: RSAPublicKey
        let issuerServer: RPCServer
        let serving: Task<Void, Never>

        func stop() {
            node.kill()
            issuerServer.shutdown()
            serving.cancel()
            loop.shutdown()
        }

        func encrypted(_ pan: String, month: String = "12", year: String = "2030") throws -> CardV1.EncryptedCardData {
            CardV1.EncryptedCardData(jwe: try JWE.encrypt(TSPHarness.card(pan, month: month, year: year), to: key))
        }

        func check(_ instrument: TspV1.CheckEligibilityRequest.Instrument, device: String = "device-1") async throws
            -> TspV1.CheckEligibilityResponse
        {
            try await wallet.checkEligibility(
                TspV1.CheckEligibilityRequest(
                    requestID: UUID().uuidString,
                    eligibilityData: TspV1.EligibilityData(language: "en", inputMethod: .manual),
                    walletAccountID: TSPHarness.account,
                    device: CardV1.DeviceInfo(deviceID: device),
                    instrument: instrument))
        }

        func digitize(
            _ eligibility: TspV1.CheckEligibilityResponse, acceptTerms: Bool = true, device: String = "device-1"
        )
            async throws -> TspV1.DigitizeResponse
        {
            var termsID = ""
            if acceptTerms, case .termsAndConditions(let terms) = eligibility.terms { termsID = terms.id }
            return try await wallet.digitize(
                TspV1.DigitizeRequest(
                    requestID: UUID().uuidString, eligibilityReceipt: eligibility.eligibilityReceipt,
                    acceptedTermsID: termsID, termsAcceptedAtMs: acceptTerms ? 1 : 0,
                    device: CardV1.DeviceInfo(deviceID: device), walletAccountID: TSPHarness.account,
                    risk: TSPHarness.lowRisk))
        }
    }

    /// A tsp-node with a fake issuer (approving) registered for the BINs of TSPHarness.visa and .mastercard.
    static func start() async throws -> Cluster {
        let loop = try EventLoop(name: "tsp-live-errors")
        let issuer = FakeIssuer()
        issuer.set(.approve)
        var issuerRouter = RPCRouter()
        issuer.register(on: &issuerRouter)
        let context = try TLSContext(
            configuration: .server(
                certificateChainFile: LiveNodeTests.pem("issuer.pem"), privateKeyFile: LiveNodeTests.pem("issuer.key"),
                trustedCAFile: LiveNodeTests.pem("ca.pem")))
        let listener = try await TLSListener.bind(context: context, on: loop)
        let issuerServer = RPCServer(router: issuerRouter)
        let serving = Task { await issuerServer.serve(listener: listener) }
        let node = try await Node(dataDirectory: try TSPHarness.temporaryDirectory(), issuerPort: listener.port)
        let issuers = TspV1.Issuers.Client(try await LiveNodeTests.client("issuer", port: node.port, loop: loop))
        _ = try await issuers.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-a", displayName: "Bank A",
                binRanges: [
                    TspV1.BinRange(low: "411111", high: "411111"), TspV1.BinRange(low: "555555", high: "555555"),
                ],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let wallet = TspV1.Provisioning.Client(try await LiveNodeTests.client("wallet", port: node.port, loop: loop))
        let published = try await wallet.getEncryptionKeys(TspV1.GetEncryptionKeysRequest()).keys
        let key = try RSAPublicKey(pem: try #require(published.first { $0.current }).publicKeyPem)
        return Cluster(
            loop: loop, node: node, wallet: wallet, issuers: issuers, key: key, issuerServer: issuerServer,
            serving: serving)
    }

    @Test func malformedCardDataIsRefusedWithInvalidArgument() async throws {
        let cluster = try await Self.start()
        defer { cluster.stop() }
        var tampered = try cluster.encrypted(TSPHarness.visa)
        tampered.jwe = String(tampered.jwe.dropLast(4)) + "AAAA"
        await expectRPCError(.invalidArgument, "encrypted_card_data") {
            try await cluster.check(.encryptedCardData(tampered))
        }
        let otherKey = try RSAPrivateKey.generate().publicKey
        let foreign = CardV1.EncryptedCardData(jwe: try JWE.encrypt(TSPHarness.card(TSPHarness.visa), to: otherKey))
        // A node masks whatever looks like a card number in the messages it sends, and a random key id's digits
        // now and then make 13 or more in a row that pass the Luhn check: the kid is looked for as the node shows it.
        await expectRPCError(.invalidArgument, maskPAN(otherKey.kid)) {
            try await cluster.check(.encryptedCardData(foreign))
        }
    }

    @Test func eachIneligibleCardHasItsOwnReason() async throws {
        let cluster = try await Self.start()
        defer { cluster.stop() }
        let cases: [(String, String, TspV1.IneligibilityReason)] = [
            ("4111111111111112", "2030", .invalidCardNumber),  // Luhn
            ("378282246310005", "2030", .unsupportedScheme),  // American Express
            (TSPHarness.visa, "2020", .cardExpired),
            (TSPHarness.otherVisa, "2030", .issuerNotParticipating),
        ]
        for (pan, year, reason) in cases {
            let answer = try await cluster.check(.encryptedCardData(try cluster.encrypted(pan, year: year)))
            #expect(!answer.eligible)
            #expect(answer.reason == reason, "\(answer.reasonMessage)")
            #expect(!answer.reasonMessage.isEmpty)
            #expect(!answer.reasonMessage.contains(pan), "a reason must not show the card number")
        }
        // Already active for this wallet account and device; another device may still add it.
        let first = try await cluster.check(.encryptedCardData(try cluster.encrypted(TSPHarness.visa)))
        #expect(try await cluster.digitize(first).decision == .approved)
        let again = try await cluster.check(.encryptedCardData(try cluster.encrypted(TSPHarness.visa)))
        #expect(again.reason == .alreadyProvisioned)
        #expect(
            try await cluster.check(.encryptedCardData(try cluster.encrypted(TSPHarness.visa)), device: "d2").eligible)
    }

    @Test func digitizeErrors() async throws {
        let cluster = try await Self.start()
        defer { cluster.stop() }
        let eligibility = try await cluster.check(.encryptedCardData(try cluster.encrypted(TSPHarness.mastercard)))
        await expectRPCError(.failedPrecondition, "terms and conditions") {
            try await cluster.digitize(eligibility, acceptTerms: false)
        }
        await expectRPCError(.permissionDenied, "another device") {
            try await cluster.digitize(eligibility, device: "device-2")
        }
        var unknown = eligibility
        unknown.eligibilityReceipt = "no-such-receipt"
        await expectRPCError(.notFound, "unknown") { try await cluster.digitize(unknown) }
        #expect(try await cluster.digitize(eligibility).decision == .approved)
        await expectRPCError(.failedPrecondition, "already exchanged") { try await cluster.digitize(eligibility) }
    }

    @Test func pushReceiptAndPushSessionErrors() async throws {
        let cluster = try await Self.start()
        defer { cluster.stop() }
        await expectRPCError(.invalidArgument, "Mastercard-only") {
            try await cluster.check(.issuerPushReceipt(.init(scheme: .visa, payload: "anything")))
        }
        await expectRPCError(.notFound, "unknown") {
            try await cluster.check(.issuerPushReceipt(.init(scheme: .mastercard, payload: "nope")))
        }
        await expectRPCError(.failedPrecondition, "Mastercard-only") {
            try await cluster.issuers.createPushReceipt(
                .init(encryptedCardData: try cluster.encrypted(TSPHarness.visa)))
        }
        let receipt = try await cluster.issuers.createPushReceipt(
            .init(encryptedCardData: try cluster.encrypted(TSPHarness.mastercard)))
        let instrument = TspV1.CheckEligibilityRequest.Instrument.issuerPushReceipt(
            .init(scheme: .mastercard, payload: receipt.payload))
        #expect(try await cluster.check(instrument).eligible)
        await expectRPCError(.failedPrecondition, "already used") { try await cluster.check(instrument) }
        await expectRPCError(.notFound, "unknown") { try await cluster.check(.pushSessionID("nope")) }
        let session = try await cluster.wallet.createPushSession(
            .init(encryptedCardData: try cluster.encrypted(TSPHarness.visa), walletAccountID: TSPHarness.account))
        #expect(try await cluster.check(.pushSessionID(session.pushSessionID)).eligible)
        await expectRPCError(.failedPrecondition, "already used") {
            try await cluster.check(.pushSessionID(session.pushSessionID))
        }
    }
}
