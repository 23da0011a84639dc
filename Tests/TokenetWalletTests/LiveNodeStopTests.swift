import Foundation
import Testing
import TokenetTestSupport

/// A node that stops ends its own work towards its peers: its notification subscription is cancelled and its
/// connection to the TSP closes with a goaway and TLS close_notify, so the TSP sees a clean close rather than a
/// connection problem, and the stopping node logs nothing after its "stopped" line.
@Suite struct LiveNodeStopTests {
    @Test(.timeLimit(.minutes(3))) func aStoppingWalletClosesItsSubscriptionCleanly() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let tsp = try await offThePool { try NodeProcess("tsp-node", role: "tsp", pki: pki) }
        let wallet = try await offThePool {
            try NodeProcess("wallet-node", role: "wallet", pki: pki, extra: ["--tsp", tsp.listen])
        }
        try await Self.waitFor("the wallet's subscription", in: tsp) { $0.contains("subscriber connected") }

        try await offThePool { wallet.stop() }
        #expect(wallet.process.termination?.status == 0)
        try await Self.waitFor("the end of the subscription", in: tsp) { $0.contains("subscriber disconnected") }
        // The TSP logs a connection that ended in a problem at info ("connection closed ... problem=..."); a clean
        // close only at debug. Give a late problem line a moment to appear.
        try await Task.sleep(for: .milliseconds(300))
        let tspLog = tsp.stderr
        #expect(!tspLog.contains("problem="), "\(tspLog)")

        let walletLines = wallet.stderr.split(separator: "\n")
        #expect(walletLines.last?.contains("wallet-node: stopped") == true, "\(wallet.stderr)")
        #expect(!walletLines.contains { $0.contains(" warning ") }, "\(wallet.stderr)")
        try await offThePool { tsp.stop() }
    }

    /// A second wallet-node started on the first one's certificate (its own data directory) took the first one's
    /// notification stream each time it reconnected, and acknowledged messages about cards it did not know. Its
    /// Subscribe is now refused while the first holds the stream, and its log says why; the first keeps it.
    @Test(.timeLimit(.minutes(3))) func aSecondWalletOnTheSameCertificateDoesNotTakeTheNotifications() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let tsp = try await offThePool { try NodeProcess("tsp-node", role: "tsp", pki: pki) }
        let first = try await offThePool {
            try NodeProcess("wallet-node", role: "wallet", pki: pki, extra: ["--tsp", tsp.listen])
        }
        try await Self.waitFor("the first wallet's subscription", in: tsp) { $0.contains("subscriber connected") }
        let second = try await offThePool {
            try NodeProcess("wallet-node", role: "wallet", pki: pki, extra: ["--tsp", tsp.listen])
        }
        try await Self.waitFor("the second wallet's refusal", in: second) {
            $0.contains("ALREADY_EXISTS") && $0.contains("is subscribed already from another node")
        }
        #expect(tsp.stderr.components(separatedBy: "subscriber connected").count - 1 == 1, "\(tsp.stderr)")
        #expect(!first.stderr.contains("notification stream to the TSP failed"), "\(first.stderr)")
        try await offThePool { second.stop() }
        try await offThePool { first.stop() }
        try await offThePool { tsp.stop() }
    }

    /// Polls `node`'s log until `condition` holds (at most 60 s, against a hang on a loaded machine).
    static func waitFor(
        _ what: String, in node: NodeProcess, _ condition: @escaping @Sendable (String) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(node.stderr) {
            guard ContinuousClock.now < deadline else {
                throw LiveTestError("\(what) did not show in the log within 60 s: \(node.stderr)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
