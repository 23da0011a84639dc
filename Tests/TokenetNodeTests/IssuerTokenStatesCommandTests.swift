import Foundation
import Testing
import TokenetTestSupport

/// `tokenet issuer suspend-tokens|resume-tokens|delete-tokens` against an issuer-node: `--recheck-unknown` is
/// parsed and sent as the request's recheck_unknown, which the node logs with each change; without it, false is
/// sent. The card named has no tokens, so the node asks no TSP (none listens at its `--tsp`).
@Suite(.serialized) struct IssuerTokenStatesCommandTests {
    @Test(.timeLimit(.minutes(3))) func recheckUnknownIsSent() async throws {
        try await offThePool { try Self.sendEachAction() }
    }

    static func sendEachAction() throws {
        let data = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        let address = "127.0.0.1:\(try freeLoopbackPort())"
        let node = try LaunchedProcess(
            niced: "issuer-node",
            [
                "--cert", pki.path("issuer.pem"), "--key", pki.path("issuer.key"), "--ca", pki.path("ca.pem"),
                "--listen", address, "--tsp", "127.0.0.1:\(try freeLoopbackPort())",
                "--fixtures", MultiIssuerLiveTests.fixture, "--data-dir", data.path("issuer"),
                "--ready-file", data.path("issuer.ready"), "--parent-pid", "\(getpid())",
            ])
        defer { PythonClientInteropTests.stop(node.process) }
        _ = try PythonClientInteropTests.waitFor(node.process, "issuer-node's ready file") {
            FileManager.default.fileExists(atPath: data.path("issuer.ready")) ? true : nil
        }
        let operatorTLS = [
            "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
        ]
        for action in ["suspend", "resume", "delete"] {
            for recheck in [true, false] {
                let arguments =
                    ["issuer", "\(action)-tokens", address, "--card", "card-visa-approve", "--reason", "LOST_CARD"]
                    + (recheck ? ["--recheck-unknown"] : []) + operatorTLS
                let before = try loggedChanges(node)
                let result = try LaunchedProcess.run("tokenet", arguments)
                try #require(result.status == 0, "\(arguments): \(result.stderr)")
                let changes = try loggedChanges(node)
                try #require(changes.count == before.count + 1, "\(arguments): \(changes)")
                let change = try #require(changes.last)
                #expect(change.contains("action=LIFECYCLE_ACTION_\(action.uppercased())"), "\(change)")
                #expect(change.contains("recheck_unknown=\(recheck)"), "\(arguments): \(change)")
            }
        }
    }

    /// The node's log lines for each change of token states so far.
    static func loggedChanges(_ node: LaunchedProcess) throws -> [String] {
        try String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
            .filter { $0.contains("token states changed at the TSP") }
    }
}
