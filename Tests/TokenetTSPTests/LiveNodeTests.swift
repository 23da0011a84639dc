import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The built `tsp-node` over mutual TLS with a fake issuer: killed with SIGKILL while it waits for the issuer's
/// decision, restarted, and asked again with the same request id.
@Suite(.serialized) struct LiveNodeTests {
    /// The shared development PKI.
    static let pki = DevelopmentPKI.shared.directory.path

    static func pem(_ name: String) -> String { pki + "/" + name }

    /// A running `tsp-node`; `kill()` sends SIGKILL and reaps it.
    final class Node {
        let process: SpawnedProcess
        let port: UInt16

        init(dataDirectory: String, issuerPort: UInt16, listenPort: UInt16 = 0) async throws {
            let ready = dataDirectory + "/ready-\(UUID().uuidString)"
            let log = dataDirectory + "/tsp-node.log"
            if !FileManager.default.fileExists(atPath: log) {
                _ = FileManager.default.createFile(atPath: log, contents: nil)
            }
            // A restarted node adds to the log of the one before.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            defer { try? handle.close() }
            handle.seekToEndOfFile()
            process = try SpawnedProcess(
                try Self.executable().path,
                [
                    "--listen", "127.0.0.1:\(listenPort)", "--cert", pem("tsp.pem"), "--key", pem("tsp.key"), "--ca",
                    pem("ca.pem"),
                    "--issuer", "127.0.0.1:\(issuerPort)", "--data-dir", dataDirectory, "--ready-file", ready,
                ],
                standardInput: .nullDevice, standardOutput: .nullDevice,
                standardError: .descriptor(handle.fileDescriptor))
            let deadline = Date().addingTimeInterval(60)
            while !FileManager.default.fileExists(atPath: ready), process.isRunning, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            guard FileManager.default.fileExists(atPath: ready),
                let address = HostPort(parsing: try ReadyFile.read(from: ready).listen)
            else {
                process.send(SIGKILL)
                process.waitUntilExit()
                throw NodeDidNotStart(log: (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
            }
            port = address.port
        }

        func kill() {
            process.send(SIGKILL)
            process.waitUntilExit()
        }

        deinit { kill() }

        static func executable() throws -> URL {
            do {
                return try BuiltExecutables.url(of: "tsp-node")
            } catch {
                throw NodeDidNotStart(log: "\(error)")
            }
        }
    }

    struct NodeDidNotStart: Error, CustomStringConvertible {
        var log: String
        var description: String { "tsp-node did not start:\n\(log)" }
    }

    static func client(_ role: String, port: UInt16, loop: EventLoop) async throws -> RPCClient {
        let context = try TLSContext(
            configuration: .client(
                certificateChainFile: pem("\(role).pem"), privateKeyFile: pem("\(role).key"),
                trustedCAFile: pem("ca.pem")))
        return RPCClient(
            stream: try await TLSConnection.connect(host: "127.0.0.1", port: port, context: context, on: loop))
    }

    @Test func sigkillWhileWaitingForTheIssuerThenRetryMakesOneToken() async throws {
        let loop = try EventLoop(name: "tsp-live-test")
        defer { loop.shutdown() }
        let issuer = FakeIssuer()
        issuer.set(.slow)
        var issuerRouter = RPCRouter()
        issuer.register(on: &issuerRouter)
        let issuerContext = try TLSContext(
            configuration: .server(
                certificateChainFile: Self.pem("issuer.pem"), privateKeyFile: Self.pem("issuer.key"),
                trustedCAFile: Self.pem("ca.pem")))
        let listener = try await TLSListener.bind(context: issuerContext, on: loop)
        let issuerServer = RPCServer(router: issuerRouter)
        let serving = Task { await issuerServer.serve(listener: listener) }
        defer {
            issuerServer.shutdown()
            serving.cancel()
        }

        let dataDirectory = try TSPHarness.temporaryDirectory()
        // A deadline far longer than the test needs, so the kill always lands while the TSP is waiting.
        try Data(#"{"issuer_deadline_ms": 120000}"#.utf8).write(
            to: URL(fileURLWithPath: dataDirectory + "/" + TSPConfiguration.fileName))
        let first = try await Node(dataDirectory: dataDirectory, issuerPort: listener.port)
        defer { first.kill() }

        let registration = TspV1.Issuers.Client(try await Self.client("issuer", port: first.port, loop: loop))
        _ = try await registration.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-a", displayName: "Bank A", binRanges: [TspV1.BinRange(low: "411111", high: "411111")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let wallet = TspV1.Provisioning.Client(try await Self.client("wallet", port: first.port, loop: loop))
        let published = try await wallet.getEncryptionKeys(TspV1.GetEncryptionKeysRequest()).keys
        let key = try RSAPublicKey(pem: try #require(published.first { $0.current }).publicKeyPem)
        let card = TSPHarness.card(TSPHarness.visa)
        let eligibility = try await wallet.checkEligibility(
            TspV1.CheckEligibilityRequest(
                requestID: "elig-1", eligibilityData: TspV1.EligibilityData(language: "es-ES", inputMethod: .manual),
                walletAccountID: TSPHarness.account, device: TSPHarness.device,
                instrument: .encryptedCardData(
                    CardV1.EncryptedCardData(jwe: try JWE.encrypt(card, to: key, kid: key.kid)))))
        try #require(eligibility.eligible)
        guard case .termsAndConditions(let terms) = eligibility.terms else {
            Issue.record("expected T&C")
            return
        }
        #expect(terms.language == "es")
        let request = TspV1.DigitizeRequest(
            requestID: "req-live", eligibilityReceipt: eligibility.eligibilityReceipt, acceptedTermsID: terms.id,
            termsAcceptedAtMs: 1, device: TSPHarness.device, walletAccountID: TSPHarness.account,
            risk: TSPHarness.lowRisk)
        let interrupted = Task { try await wallet.digitize(request) }
        // Bounded wait for the issuer to be asked: the token and the request are stored by then.
        for _ in 0..<3000 where issuer.state.withLock({ $0.authorizations }) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(issuer.state.withLock { $0.authorizations } == 1)
        first.kill()
        #expect(first.process.termination?.reason == .uncaughtSignal)
        #expect((try? await interrupted.value) == nil)

        issuer.set(.approve)
        let second = try await Node(dataDirectory: dataDirectory, issuerPort: listener.port)
        defer { second.kill() }
        let retrying = TspV1.Provisioning.Client(try await Self.client("wallet", port: second.port, loop: loop))
        let response = try await retrying.digitize(request)
        #expect(response.decision == .approved)
        #expect(response.decidedBy == "issuer")
        #expect(try await retrying.digitize(request) == response)
        let control = TspV1.TspControl.Client(try await Self.client("operator", port: second.port, loop: loop))
        let tokens = try await control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(tokens.map(\.digitalCardID) == [response.digitalCardID])
        #expect(tokens.first?.state == .active)
        let history = try await control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: response.digitalCardID))
        #expect(history.events.map(\.toState) == [.inactive, .active])
        let log = try String(contentsOfFile: dataDirectory + "/tsp-node.log", encoding: .utf8)
        #expect(!log.contains(TSPHarness.visa))
    }
}
