import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// SIGQUIT (Ctrl-\) quits a node or the CLI at once, as it quits other programs. The Swift runtime's crash reporter
/// used to take it: it wrote a backtrace headed "Program crashed" and let the process run on, a Watch streaming and
/// a node serving as before.
@Suite struct QuitSignalTests {
    @Test(.timeLimit(.minutes(3))) func sigquitEndsAStreamingCallAndANode() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGKILL) }
        let watch = try LaunchedProcess(
            "tokenet", ["call", "\(address)", "tokenet.health.v1.Health/Watch", "--plaintext", "-d", "{}"])
        defer { watch.process.send(SIGKILL) }
        let deadline = Date().addingTimeInterval(60)
        while !((try? String(contentsOfFile: watch.directory.path("stdout"), encoding: .utf8)) ?? "").contains(
            "SERVING")
        {
            guard Date() < deadline, watch.process.isRunning else {
                Issue.record("the watch never printed its first message")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        for (name, process) in [("tokenet call", watch), ("tsp-node", node)] {
            process.process.send(SIGQUIT)
            let result = try await process.waitForExit(limit: 30)
            #expect(
                result.reason == .uncaughtSignal && result.status == SIGQUIT,
                "\(name): \(result.reason) \(result.status)")
            #expect(!result.stderr.contains("Program crashed"), "\(name): \(result.stderr)")
        }
    }

    /// SIGUSR1 and SIGUSR2 leave a node running (by default they ended it at once, with its ready file left behind).
    @Test(.timeLimit(.minutes(3))) func sigusr1AndSigusr2AreIgnored() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, address) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGKILL) }
        node.process.send(SIGUSR1)
        node.process.send(SIGUSR2)
        let health = try await LaunchedProcess(
            "tokenet", ["call", "\(address)", "tokenet.health.v1.Health/Check", "--plaintext", "-d", "{}"]
        ).waitForExit(limit: 60)
        #expect(health.status == 0 && health.stdout.contains("SERVING"), "\(health.stderr)")
        node.process.send(SIGTERM)
        let result = try await node.waitForExit(limit: 60)
        #expect(result.reason == .exit && result.status == 0, "\(result.reason) \(result.status): \(result.stderr)")
    }
}
