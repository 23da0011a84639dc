import Foundation
import Testing
import TokenetNode
import TokenetTestSupport
import TokenetTransport

/// SIGHUP, which a closing terminal sends, stops nodes and `tokenet up` as SIGTERM does (a node under `nohup` keeps
/// ignoring it): killed by it, `tokenet up` left its temporary workspace, certificates and keys included, behind.
@Suite(.timeLimit(.minutes(3))) struct HangupTests {
    @Test func aNodeStartedUnderNohupOutlivesAHangup() async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            executable: URL(fileURLWithPath: "/usr/bin/nohup"),
            [
                try BuiltExecutables.url(of: "tsp-node").path, "--plaintext", "--data-dir", scratch.path("data"),
                "--ready-file", readyFile, "--log-format", "json",
            ])
        defer { node.process.send(SIGKILL) }
        try await Self.waitUntil("the node's ready file", of: node.process) {
            FileManager.default.fileExists(atPath: readyFile)
        }
        node.process.send(SIGHUP)
        try await Task.sleep(for: .seconds(1))
        #expect(node.process.isRunning)
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.status == 0, "\(result.stderr)")
        // Had the hangup been taken, it would be the signal the stop names: it came first.
        #expect(result.stderr.contains(#""msg":"stopping","signal":"SIGTERM""#), "\(result.stderr)")
        #expect(!result.stderr.contains("SIGHUP"), "\(result.stderr)")
    }

    /// A node whose READY line cannot be written (stdout on a full disk, here /dev/full) says so in its log: it
    /// served, and whoever waited for the line waited without a word.
    @Test func aLostReadyLineIsLogged() async throws {
        let scratch = try TemporaryDirectory()
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "exec \"$0\" \"$@\" > /dev/full", try BuiltExecutables.url(of: "tsp-node").path, "--plaintext",
                "--data-dir", scratch.path("data"), "--ready-file", readyFile,
            ])
        defer { node.process.send(SIGKILL) }
        try await Self.waitUntil("the node's ready file", of: node.process) {
            FileManager.default.fileExists(atPath: readyFile)
        }
        node.process.send(SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("the READY line could not be written to standard output")
                && result.stderr.contains("No space left on device"),
            "\(result.stderr)")
    }

    @Test func upStopsItsNodesAndRemovesItsWorkspaceOnAHangup() async throws {
        let up = try LaunchedProcess(niced: "tokenet", ["up", "--timeout", "60"])
        defer { up.process.send(SIGKILL) }
        let stdout = up.directory.path("stdout")
        func output() -> String { (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "" }
        // Standard input is /dev/null: its end comes at once, and the nodes keep running.
        func upOutput() -> String {
            output() + ((try? String(contentsOfFile: up.directory.path("stderr"), encoding: .utf8)) ?? "")
        }
        try await Self.waitUntil(
            "tokenet up's end of input", of: up.process, saying: upOutput,
            until: { output().contains("(end of input: the nodes keep running") })
        let workspaceLine = try #require(output().split(separator: "\n").first { $0.contains("workspace") })
        let workspace = try #require(workspaceLine.split(separator: " ").first { $0.first == "/" }.map(String.init))
        #expect(FileManager.default.fileExists(atPath: workspace + "/pki/operator.key"))

        up.process.send(SIGHUP)
        let result = try await up.waitForExit()
        #expect(result.reason == .exit && result.status == 0, "\(result.stdout)\(result.stderr)")
        for node in ["tsp-node", "wallet-node", "issuer-node"] {
            #expect(result.stdout.contains(" \(node) pid="), "\(result.stdout)")
        }
        #expect(result.stdout.components(separatedBy: "exited with status 0").count == 4, "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: workspace), "\(workspace) was left behind")
    }

    /// Waits for `condition`; when it does not come, the issue says so with what `saying` gives (the process's
    /// output, which tells why it ended).
    private static func waitUntil(
        _ what: String, of process: SpawnedProcess, saying: () -> String = { "" }, until condition: () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !condition() {
            guard process.isRunning, ContinuousClock.now < deadline else {
                Issue.record("\(what) did not come (running: \(process.isRunning))\n\(saying())")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
