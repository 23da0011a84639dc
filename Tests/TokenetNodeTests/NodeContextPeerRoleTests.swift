import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node's channel to a peer accepts only that peer's role: a `--tsp` that points at the issuer by mistake fails
/// the handshake with both roles named, instead of sending the TSP's requests to whoever answers; the failure names
/// the peer and its flag.
@Suite struct NodeContextPeerRoleTests {
    @Test(.timeLimit(.minutes(3))) func aChannelRefusesAPeerOfAnotherRole() async throws {
        let pki = DevelopmentPKI.shared
        let listener = try await Self.serving("issuer")
        let loop = try EventLoop(name: "test-node-peer-role")
        defer { loop.shutdown() }

        var options = NodeOptions()
        options.certificatePath = pki.path("wallet.pem")
        options.privateKeyPath = pki.path("wallet.key")
        options.caPath = pki.path("ca.pem")
        options.peers = [.tsp: listener.boundAddress, .issuer: listener.boundAddress]
        let context = NodeContext(
            options: options, logger: Logger(node: "wallet-node", sink: MemoryLogSink()), dataDirectory: "",
            eventLoop: loop)

        let issuer = try context.channel(to: .issuer)
        let answer = try await issuer.unary(
            HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(60)))
        #expect(answer.status == .serving)
        await issuer.close()

        let tsp = try context.channel(to: .tsp)
        let error = await #expect(throws: RPCError.self) {
            _ = try await tsp.unary(
                // 60 s, as above: a loaded full run once starved the handshake past a 10 s deadline. The refusal
                // itself fails the call at once.
                HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(60)))
        }
        await tsp.close()
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("peer tokenet://issuer/issuer-1 is not accepted here (accepted roles: tsp)"), "\(text)")
        // The peer the node could not connect to is named with the flag that gives its address, for a caller that
        // passes the failure on (issuer push-card to a stopped wallet said only "cannot connect after 13 attempt(s)").
        #expect(
            text.contains("cannot connect to the tsp-node at \(listener.boundAddress) (--tsp) after 1 attempt(s): "),
            "\(text)")
        try await offThePool { listener.stop() }
    }

    /// A node of `role` (tsp, issuer or wallet) of the development PKI serving nothing but health, over TLS.
    static func serving(_ role: String, logs: MemoryLogSink = MemoryLogSink()) async throws -> RPCNodeListener {
        let pki = DevelopmentPKI.shared
        var served = NodeOptions()
        served.certificatePath = pki.path("\(role).pem")
        served.privateKeyPath = pki.path("\(role).key")
        served.caPath = pki.path("ca.pem")
        return try await offThePool { [served] in
            try RPCNodeListener.bind(
                options: served, router: RPCRouter(), logger: Logger(node: "\(role)-node", level: .debug, sink: logs))
        }
    }
}
