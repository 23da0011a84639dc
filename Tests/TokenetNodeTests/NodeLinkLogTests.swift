import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node has more than one channel to a peer (its calls and its notification subscription to the TSP), and each
/// logged that the peer could not be reached and then that it was reached again: every line came twice.
@Suite struct NodeLinkLogTests {
    @Test(.timeLimit(.minutes(3))) func aPeerThatCannotBeReachedIsLoggedOnceWhateverTheChannels() async throws {
        let loop = try EventLoop(name: "test-node-link-log")
        defer { loop.shutdown() }
        let port = try FreePorts.run(of: 1)
        var options = NodeOptions()
        options.plaintext = true
        options.peers = [.tsp: HostPort(host: "127.0.0.1", port: UInt16(port))]
        let logs = MemoryLogSink()
        let context = NodeContext(
            options: options, logger: Logger(node: "issuer-node", sink: logs), dataDirectory: "", eventLoop: loop)
        let calls = try context.channel(to: .tsp)
        let subscription = try context.channel(to: .tsp)
        for channel in [calls, subscription] {
            await #expect(throws: RPCError.self) {
                _ = try await channel.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(1)))
            }
        }
        await calls.close()
        await subscription.close()
        let lines = logs.lines.filter { $0.contains("cannot reach the tsp-node") }
        #expect(lines.count == 1, "\(logs.lines)")
    }

    @Test func linkChangesAreNewsOncePerPeer() {
        let outgoing = NodeOutgoing()
        #expect(outgoing.isNews(.unreachable(reason: "refused"), peer: "tsp"))
        #expect(!outgoing.isNews(.unreachable(reason: "refused"), peer: "tsp"))
        #expect(outgoing.isNews(.unreachable(reason: "refused"), peer: "issuer"))
        #expect(outgoing.isNews(.reachable(afterFailedAttempts: 3), peer: "tsp"))
        #expect(!outgoing.isNews(.reachable(afterFailedAttempts: 2), peer: "tsp"))
        #expect(outgoing.isNews(.unreachable(reason: "refused"), peer: "tsp"))
    }
}

/// A peer of another PKI: both sides say which CA is at fault, where they quoted OpenSSL alone ("self-signed
/// certificate in certificate chain" calling, "tlsv1 alert unknown ca" serving).
@Suite struct PeerOfAnotherPKITests {
    @Test(.timeLimit(.minutes(3))) func bothSidesNameTheCA() async throws {
        let pki = DevelopmentPKI.shared
        let serverLogs = MemoryLogSink()
        let listener = try await NodeContextPeerRoleTests.serving("tsp", logs: serverLogs)
        let loop = try EventLoop(name: "test-node-other-pki")
        defer { loop.shutdown() }
        var options = NodeOptions()
        options.certificatePath = pki.untrustedPath("wallet.pem")
        options.privateKeyPath = pki.untrustedPath("wallet.key")
        options.caPath = pki.untrustedPath("ca.pem")
        options.peers = [.tsp: listener.boundAddress]
        let logs = MemoryLogSink()
        let context = NodeContext(
            options: options, logger: Logger(node: "wallet-node", sink: logs), dataDirectory: "", eventLoop: loop)
        let tsp = try context.channel(to: .tsp)
        await #expect(throws: RPCError.self) {
            _ = try await tsp.unary(
                HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(10)))
        }
        await tsp.close()
        try await offThePool { listener.stop() }
        let calling = logs.lines.first { $0.contains("cannot reach the tsp-node") } ?? ""
        #expect(
            calling.contains(
                "its certificate is not signed by the CA of --ca (\(pki.untrustedPath("ca.pem"))): both nodes need "
                    + "certificates of one PKI"), "\(logs.lines)")
        #expect(
            serverLogs.lines.contains { $0.contains("handshake failed: the peer does not trust this node's CA") },
            "\(serverLogs.lines)")
    }
}

/// OpenSSL's words, read for the PKI they point at, on each side.
@Suite struct PeerCertificateHintTests {
    @Test func theCAIsNamedByOpenSSLsWords() {
        let rejected = "peer certificate rejected: self-signed certificate in certificate chain [error:0A000086]"
        #expect(PeerCertificateHint.calling(rejected, ca: "pki/ca.pem")?.contains("CA of --ca (pki/ca.pem)") == true)
        // A client of another PKI, refused by this node.
        #expect(PeerCertificateHint.serving(rejected)?.contains("not signed by the CA of this node's --ca") == true)
        #expect(
            PeerCertificateHint.serving("TLS handshake failed [tlsv1 alert unknown ca]")?.contains("does not trust")
                == true)
        #expect(PeerCertificateHint.calling("peer certificate rejected: certificate has expired", ca: nil) == nil)
        #expect(PeerCertificateHint.serving("connection reset by peer") == nil)
    }
}
