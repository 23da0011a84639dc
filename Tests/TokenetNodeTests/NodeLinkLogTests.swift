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
