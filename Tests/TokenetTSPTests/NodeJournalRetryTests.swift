import Foundation
import Testing
import TokenetNode
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The node's startup (`TSPNode.services` with a `NodeContext`, as `tsp-node` runs it) starts the notification
/// journal's retry in the node's background: a message the broker could not take goes out with no further change.
@Suite struct NodeJournalRetryTests {
    @Test func theNodesStartupRetriesAPublishThatFailedOnce() async throws {
        let directory = try TSPHarness.temporaryDirectory()
        let keys = directory + "/keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try TSPHarness.tspKey.write(toFile: keys + "/card-key-current.pem")
        let loop = try EventLoop(name: "tsp-journal-retry-test")
        defer { loop.shutdown() }
        let logs = MemoryLogSink()
        let outgoing = NodeOutgoing()
        let resources = NodeResources()
        let logger = Logger(node: "tsp-node", sink: logs)
        let context = NodeContext(
            options: NodeOptions(), logger: logger, dataDirectory: directory, eventLoop: loop, outgoing: outgoing,
            resources: resources)
        let published = RecordingPublisher()
        let router = try TSPNode.services(
            context, configuration: TSPHarness.configuration, accessTokens: nil, notifications: published)
        defer {
            outgoing.cancelTasks()
            resources.closeAll(logger: logger)
        }
        let wallet = PeerIdentity(role: .wallet, nodeID: "wallet-1")
        let tsp = TSPHarness(
            directory: directory, clock: TestClock(), issuer: FakeIssuer(), logs: logs, router: router,
            wallet: TspV1.Provisioning.Client(TSPHarness.connect(router, as: wallet)),
            issuers: TspV1.Issuers.Client(
                TSPHarness.connect(router, as: PeerIdentity(role: .issuer, nodeID: "issuer-1"))),
            control: TspV1.TspControl.Client(
                TSPHarness.connect(router, as: PeerIdentity(role: .operator, nodeID: "op-1"))),
            otp: FakeIssuerOTP(), idv: TspV1.Idv.Client(TSPHarness.connect(router, as: wallet)),
            issuerIdv: TspV1.IssuerIdv.Client(
                TSPHarness.connect(router, as: PeerIdentity(role: .issuer, nodeID: "issuer-1"))),
            published: published)
        // No issuer node: the stand-in approves the low-risk digitization.
        let id = try #require(try await tsp.activeTokens(1).first)

        published.fail(true)
        let lifecycle = TspV1.TokenLifecycle.Client(TSPHarness.connect(router, as: wallet))
        _ = try await lifecycle.changeTokenState(LifecycleTests.change(id, .suspend))
        #expect(published.of("CARD_STATE").isEmpty)
        published.fail(false)

        // Nothing else happens: only the node's retry can publish it now. A generous bound ends a retry that never
        // runs with a failure instead of a hang; the retry's first wait is one second.
        let clock = ContinuousClock()
        let giveUp = clock.now.advanced(by: .seconds(120))
        // The retry logs its line after the drain that published returns: waited for too, or a run that looked in
        // between found the message and not yet the line.
        let retried = "journaled notifications published on retry"
        while (published.of("CARD_STATE").isEmpty || !logs.lines.contains { $0.contains(retried) })
            && clock.now < giveUp
        {
            try await Task.sleep(for: .milliseconds(20))
        }
        let states = published.of("CARD_STATE")
        #expect(states.map(\.notification.cardID) == [id], "\(logs.lines)")
        #expect(logs.lines.contains { $0.contains(retried) }, "\(logs.lines)")
    }
}
