import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetIssuer

/// The node's own wiring over real mutual TLS: `IssuerNode.services` registers with a TSP that starts after it,
/// and an operator pushes a card through the TSP.
@Suite(.serialized) struct LiveIssuerNodeTests {
    /// The shared development PKI.
    static let certificates = DevelopmentPKI.shared.directory

    static func path(_ name: String) -> String { certificates.appendingPathComponent(name).path }

    static func server(_ name: String) throws -> TLSContext {
        try TLSContext(
            configuration: .server(
                certificateChainFile: path("\(name).pem"), privateKeyFile: path("\(name).key"),
                trustedCAFile: path("ca.pem")))
    }

    @Test(.timeLimit(.minutes(3)))
    func registersWithALateTSPAndPushesAReceiptOverTLS() async throws {
        let loop = try EventLoop(name: "issuer-live-test")
        defer { loop.shutdown() }
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("issuer-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }

        // A free port for the TSP, which is not listening yet when the issuer starts: from below the ephemeral range,
        // where a port just let go was taken as another connection's source port before the TSP could bind it.
        let tspPort = UInt16(try FreePorts.run())

        var options = NodeOptions()
        options.certificatePath = Self.path("issuer.pem")
        options.privateKeyPath = Self.path("issuer.key")
        options.caPath = Self.path("ca.pem")
        options.peers[.tsp] = HostPort(host: "127.0.0.1", port: tspPort)
        options.fixturesPath = Support.fixturePath
        let sink = MemoryLogSink()
        let context = NodeContext(
            options: options, logger: Logger(node: "issuer-node", level: .debug, sink: sink),
            dataDirectory: dataDirectory, eventLoop: loop)
        let router = try IssuerNode.services(context)

        let tsp = FakeTSP(key: try Support.tspKey())
        let tspListener = try await TLSListener.bind(port: tspPort, context: try Self.server("tsp"), on: loop)
        let tspServer = RPCServer(router: tsp.router)
        let tspServing = Task { await tspServer.serve(listener: tspListener) }
        // Wait for the issuer to know it is registered, not only for the TSP to have seen the call: on a loaded
        // machine an attempt can reach the TSP yet time out at the issuer, and the next attempt completes it.
        while !sink.lines.contains(where: { $0.contains("registered with the TSP") }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(tsp.state.withLock { $0.registrations.first?.issuerID } == "tokenet-bank")

        let issuerListener = try await TLSListener.bind(context: try Self.server("issuer"), on: loop)
        let issuerServer = RPCServer(router: router)
        let issuerServing = Task { await issuerServer.serve(listener: issuerListener) }
        let operatorContext = try TLSContext(
            configuration: .client(
                certificateChainFile: Self.path("operator.pem"), privateKeyFile: Self.path("operator.key"),
                trustedCAFile: Self.path("ca.pem")))
        let connection = try await TLSConnection.connect(
            host: "127.0.0.1", port: issuerListener.port, context: operatorContext, on: loop)
        let control = IssuerV1.IssuerControl.Client(RPCClient(stream: connection))
        let response = try await control.pushCard(IssuerV1.PushCardRequest(cardID: Cards.mcReceipt.0, mode: .receipt))
        guard case .receipt(let receipt) = response.result else {
            Issue.record("expected a receipt, got \(String(describing: response.result))")
            return
        }
        #expect(receipt.payload == "receipt-1")
        #expect(tsp.state.withLock { $0.receiptCards.map(\.accountNumber) } == [Cards.mcReceipt.1])
        #expect(sink.lines.contains { $0.contains("registered with the TSP") })

        issuerServer.shutdown()
        tspServer.shutdown()
        await issuerListener.close()
        await tspListener.close()
        issuerServing.cancel()
        tspServing.cancel()
    }
}
