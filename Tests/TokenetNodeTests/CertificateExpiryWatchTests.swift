import Foundation
import Testing

@testable import TokenetNode

/// A node whose certificate expires while it runs says so when it does: its peers refuse every new connection from
/// then on, and its log showed only handshake failures.
@Suite struct CertificateExpiryWatchTests {
    @Test(.timeLimit(.minutes(1))) func theExpiryIsLoggedWhenItComes() async throws {
        let logs = MemoryLogSink()
        let watch = NodeRuntime.watchExpiry(
            Date().addingTimeInterval(0.3), certificate: "pki/tsp.pem", logger: Logger(node: "tsp-node", sink: logs))
        await watch?.value
        let line = try #require(logs.lines.first { $0.contains("has expired") }, "\(logs.lines)")
        #expect(line.contains("this node's certificate pki/tsp.pem has expired: its peers refuse every new connection"))
        #expect(line.contains("error"), "\(line)")
    }

    @Test func aStoppedNodeLogsNothingMore() async {
        let logs = MemoryLogSink()
        let watch = NodeRuntime.watchExpiry(
            Date().addingTimeInterval(3_600), certificate: "pki/tsp.pem", logger: Logger(node: "tsp-node", sink: logs))
        watch?.cancel()
        await watch?.value
        #expect(logs.lines.isEmpty)
        #expect(NodeRuntime.watchExpiry(nil, certificate: nil, logger: Logger(node: "tsp-node", sink: logs)) == nil)
    }
}
