import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// The Python wallet provider after provisioning (`Tools/interop/python-wallet-notifications`, written from
/// `notifications.proto`, `lifecycle.proto` and the README alone) against a real `tsp-node` and `issuer-node`: the
/// issuer's, the operator's and the wallet's own token state changes reach the wallet's notification stream in order
/// with the right token and state, at most `max_in_flight` at a time; what the wallet did not acknowledge comes again
/// after it reconnects and what it did never does; what changed while it was away arrives when it subscribes again;
/// the wallet's refused calls have the documented status codes.
@Suite struct PythonWalletNotificationsInteropTests {
    struct Outcome: Sendable {
        var run: ProcessResult
        var refused: ProcessResult
        var logs: [String]
        var nodesExitedCleanly: [Bool]
    }

    static let script = "Tools/interop/python-wallet-notifications"

    static func run() throws -> Outcome {
        let pki = DevelopmentPKI.shared
        let nodes = try PythonWalletInteropTests.Nodes.start(pki)
        defer { nodes.stop() }
        let run = try PythonClientInteropTests.runCheck(
            ["--tsp", nodes.tsp, "--pki", pki.directory.path], script: script)
        // A change the TSP refuses where the script expects it to succeed fails the run: here the "issuer"
        // certificate is the operator's, whose role may not call ChangeIssuerTokenStates.
        let other = try TemporaryDirectory()
        for (name, source) in [
            ("ca.pem", "ca.pem"), ("wallet.pem", "wallet.pem"), ("wallet.key", "wallet.key"),
            ("operator.pem", "operator.pem"), ("operator.key", "operator.key"), ("issuer.pem", "operator.pem"),
            ("issuer.key", "operator.key"),
        ] {
            try FileManager.default.copyItem(atPath: pki.path(source), toPath: other.path(name))
        }
        let refused = try PythonClientInteropTests.runCheck(
            ["--tsp", nodes.tsp, "--pki", other.url.path], script: script)
        var exits: [Bool] = []
        for node in [nodes.tspNode, nodes.issuerNode] {
            node.process.send(SIGTERM)
            node.process.waitUntilExit(killingAfter: 30)
            exits.append(node.process.termination?.isCleanExit == true)
        }
        return Outcome(
            run: run, refused: refused, logs: [nodes.tspLog, nodes.issuerLog], nodesExitedCleanly: exits)
    }

    @Test func aPythonWalletFollowsItsTokensThroughTheTSPsNotifications() async throws {
        let outcome = try await offThePool { try Self.run() }
        let result = outcome.run
        let output = result.stdout
        let lines = output.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "stdout:\n\(output)\nstderr:\n\(result.stderr)")
        let results = lines.filter { $0.hasPrefix("RESULT ") }
        #expect(
            results.map { $0.split(separator: " ").prefix(3).joined(separator: " ") } == [
                "RESULT issuer-changes ok:", "RESULT durability ok:", "RESULT wallet-lifecycle ok:",
            ], "\(output)")
        #expect(lines.last == "python-wallet-notifications: every stage as documented", "\(output)")
        for step in [
            "[issuer-changes] nothing more arrives within 1.0 s: two messages are in flight, max_in_flight is 2",
            "[issuer-changes] QueueStatus of wallet/wallet-1: 3 pending, 2 in flight, connected",
            "attempt 1: SUSPENDED (reason FRAUD_SUSPECTED, initiator tsp)",
            "attempt 2: ACTIVE (reason CARD_FOUND, initiator issuer)",
            "[durability] nothing more arrives within 1.0 s: the acknowledged messages are not sent again",
            "[durability] QueueStatus of wallet/wallet-1: 3 pending, 0 in flight, not connected",
            "[durability] the first stream ends: ABORTED: ",
            "attempt 1: SUSPENDED (reason USER_REQUEST, initiator wallet)",
            "(reason 'USER_REQUEST'): FAILED_PRECONDITION, as documented: cannot resume a token that is ACTIVE",
            "[wallet-lifecycle] wallet suspend DNIT-NO-SUCH-TOKEN (reason 'USER_REQUEST'): NOT_FOUND, as documented",
            "[wallet-lifecycle] other wallet suspend DNIT",
            "attempt 1: DEACTIVATED (reason CARD_CLOSED, initiator issuer)",
            "[wallet-lifecycle] nothing more arrives within 1.0 s: refused calls and repeated deletes notify no one",
        ] {
            #expect(output.contains(step), "no \(step) in:\n\(output)")
        }
        #expect(output.contains("(reason 'USER_REQUEST'): PERMISSION_DENIED, as documented"), "\(output)")
        // Every notification the stream delivered the first time, in publication order: ten changes, one token id
        // for the first nine.
        let firsts = lines.filter { $0.contains("] received #") && $0.contains(" attempt 1: ") }
        #expect(firsts.count == 10, "\(output)")
        #expect(
            firsts.map { $0.split(separator: "#")[1].split(separator: " ")[0] } == (1...10).map { "\($0)" },
            "\(output)")
        PythonWalletInteropTests.expectNoPAN(in: [output, result.stderr] + outcome.logs)

        let refused = outcome.refused
        #expect(refused.status == 1, "stdout:\n\(refused.stdout)\nstderr:\n\(refused.stderr)")
        #expect(
            refused.stdout.contains(
                "RESULT issuer-changes FAIL: /tokenet.tsp.v1.TokenLifecycle/ChangeIssuerTokenStates: "
                    + "PERMISSION_DENIED"),
            "\(refused.stdout)")
        #expect(refused.stdout.contains("RESULT wallet-lifecycle FAIL: skipped after issuer-changes failed"))
        #expect(outcome.nodesExitedCleanly == [true, true])
    }
}
