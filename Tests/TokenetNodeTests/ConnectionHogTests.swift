import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A peer that opens connections in a loop, against a real node with few file descriptors: its connections past
/// `--peer-connections` are refused with the reason, its handshakes past `--address-handshakes` are closed, and
/// other peers are still served.
@Suite struct ConnectionHogTests {
    @Test(.timeLimit(.minutes(3))) func aPeerOpeningConnectionsInALoopIsRefusedAndOthersAreServed() async throws {
        let scratch = try TemporaryDirectory()
        // 64 descriptors: without the limits the hog's 100 connections would take every one of them.
        let tsp = try await DescriptorLimitedTSP.start(
            in: scratch, ["--peer-connections", "3", "--address-handshakes", "8"])
        defer { tsp.stop() }
        let (node, address) = (tsp.node, tsp.address)
        let loop = try EventLoop(name: "test-connection-hog")
        defer { loop.shutdown() }
        let context = DescriptorLimitedTSP.clientContext
        func health(_ client: RPCClient) async throws -> HealthV1.ServingStatus {
            try await client.unary(
                HealthV1.Health.check, HealthV1.HealthCheckRequest(), options: CallOptions(timeout: .seconds(30))
            ).status
        }
        let hogContext = try context("wallet")
        func hogConnection() async throws -> TLSConnection {
            try await TLSConnection.connect(host: address.host, port: address.port, context: hogContext, on: loop)
        }

        var hog: [RPCClient] = []
        for _ in 0..<3 {
            let client = RPCClient(stream: try await hogConnection())
            #expect(try await health(client) == .serving)
            hog.append(client)
        }
        let refused = RPCClient(stream: try await hogConnection())
        do {
            _ = try await health(refused)
            Issue.record("the hog's fourth connection was served")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            // Not processed, from a node that is not stopping: refused by the goaway (the call was sent before it
            // came), or never sent (the goaway had closed the connection first; which comes first is the loop's
            // timing).
            #expect((error.callWasNotProcessed || error.callWasNeverSent) && !error.callMetAStoppingPeer)
            #expect(
                error.message.contains(
                    "tokenet://wallet/wallet-1 already has 3 connections open to this node, the most one peer may "
                        + "have; make calls on a connection already open, or close some, then retry"),
                "\(error.message)")
        }
        // The hog keeps going, holding every connection it gets, far past the node's descriptors.
        var held: [TLSConnection] = []
        for _ in 0..<100 { held.append(try await hogConnection()) }

        let other = RPCClient(
            stream: try await TLSConnection.connect(
                host: address.host, port: address.port, context: try context("operator"), on: loop))
        #expect(try await health(other) == .serving)
        #expect(try await health(hog[0]) == .serving)

        // Connections that never start TLS: past eight in progress from one address, each is closed at once.
        var silent: [PlainConnection] = []
        for _ in 0..<9 {
            silent.append(try await PlainConnection.connect(host: address.host, port: address.port, on: loop))
        }
        #expect((try? await silent[8].read()) == nil, "the ninth handshake was left waiting")
        for connection in silent { await connection.abort() }

        let stderr = node.directory.path("stderr")
        let log = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
        let refusal = try #require(log.split(separator: "\n").first { $0.contains("connection refused") }, "\(log)")
        #expect(refusal.contains("tokenet://wallet/wallet-1"), "\(refusal)")
        #expect(refusal.contains("already has 3 connections open"), "\(refusal)")
        #expect(log.contains("127.0.0.1 already has 8 TLS handshakes in progress"), "\(log)")

        await refused.close()
        for client in hog { await client.close() }
        for connection in held { await connection.abort() }
        #expect(try await health(other) == .serving)
        // A command refused for its certificate's connections is told the node's words alone: it was also told
        // that the node "is stopping … run the command again once the node is back", a restart never coming.
        var operators = [other]
        for _ in 0..<2 {
            operators.append(
                RPCClient(
                    stream: try await TLSConnection.connect(
                        host: address.host, port: address.port, context: try context("operator"), on: loop)))
        }
        for client in operators { #expect(try await health(client) == .serving) }
        let pki = DevelopmentPKI.shared
        let command = try await offThePool {
            try runTokenet([
                "tsp", "tokens", "\(address.host):\(address.port)", "--cacert", pki.path("ca.pem"), "--cert",
                pki.path("operator.pem"), "--key", pki.path("operator.key"),
            ])
        }
        #expect(command.status == 64 + StatusCode.unavailable.rawValue, "\(command.stderr)")
        #expect(command.stderr.contains("already has 3 connections open to this node"), "\(command.stderr)")
        #expect(!command.stderr.contains("is stopping"), "\(command.stderr)")
        for client in operators.dropFirst() { await client.close() }
        await other.close()
        node.process.send(SIGTERM)
        #expect(try await node.waitForExit().status == 0)
    }
}
