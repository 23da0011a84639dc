import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

@testable import TokenetNode

/// A node's `call failed` lines are held back per peer and status: a peer failing call after call gets one line a
/// second, and another peer's failure in between, or the same peer's of another kind, still gets its own line, not a
/// count on the first one's.
@Suite struct FailedCallThrottleTests {
    @Test(.timeLimit(.minutes(3))) func onePeersFailuresHideNoOtherPeersFailure() async throws {
        let data = try TemporaryDirectory()
        let node = try LaunchedProcess.tspNode(in: data)
        defer { node.process.send(SIGTERM) }
        let readyFile = data.path("ready.json")
        let deadline = Date().addingTimeInterval(180)
        while !FileManager.default.fileExists(atPath: readyFile) {
            try #require(node.process.isRunning && Date() < deadline, "tsp-node did not become ready")
            try await Task.sleep(for: .milliseconds(20))
        }
        let address = try #require(HostPort(parsing: try ReadyFile.read(from: readyFile).listen))
        let loop = try EventLoop(name: "test-failed-call-throttle")
        defer { loop.shutdown() }
        func client(_ name: String) async throws -> RPCClient {
            RPCClient(
                stream: try await TLSConnection.connect(
                    host: address.host, port: address.port, context: try DescriptorLimitedTSP.clientContext(name),
                    on: loop))
        }
        func fail(_ client: RPCClient) async {
            await #expect(throws: RPCError.self) {
                try await client.unary(
                    HealthV1.Health.check, HealthV1.HealthCheckRequest(service: "no.such.Service"),
                    options: CallOptions(timeout: .seconds(30)))
            }
        }
        let wallet = try await client("wallet")
        let operatorClient = try await client("operator")
        for _ in 0..<5 { await fail(wallet) }
        await fail(operatorClient)
        // Another kind of failure from the same peer has its own line too.
        await #expect(throws: RPCError.self) {
            try await wallet.unary(
                TspV1.TspControl.listTokens, TspV1.ListTokensRequest(), options: CallOptions(timeout: .seconds(30)))
        }
        await wallet.close()
        await operatorClient.close()
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        let failed = result.stderr.split(separator: "\n").filter { $0.contains("call failed") }
        // How many of the wallet's lines are held back depends on how fast the machine made its calls; the
        // operator's one failure has its own line, whatever the wallet's throttle held.
        #expect(failed.contains { $0.contains("peer=tokenet://wallet/wallet-1") }, "\(result.stderr)")
        let operatorLines = failed.filter { $0.contains("peer=tokenet://operator/operator-1") }
        #expect(operatorLines.count == 1, "\(result.stderr)")
        #expect(operatorLines.first?.contains("not_shown") == false, "\(operatorLines)")
        // A line of its own, counting none of the NOT_FOUND lines: held back with them (a throttle keyed by peer
        // alone), it would still be written at the end, as the newest held back, with their count.
        #expect(
            failed.contains {
                $0.contains("peer=tokenet://wallet/wallet-1") && $0.contains("status=PERMISSION_DENIED")
                    && !$0.contains("not_shown")
            },
            "\(result.stderr)")
    }
}
