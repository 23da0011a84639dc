import Foundation
import Testing
import TokenetTestSupport

/// A running node's own threads carry their names where `top -H`, `ps -L`, perf and debuggers show them: the
/// signal relay, the parent watch, the TSP's notification committer and the RPC event loop. Named only through
/// Foundation before their start, the watch and the committer showed as `tsp-node`, like the main thread.
@Suite struct NodeThreadNameTests {
    @Test(.timeLimit(.minutes(3))) func aRunningTSPNamesItsThreads() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, _) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGTERM) }
        let pid = node.process.pid
        var names: Set<String> = []
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8) else {
                continue  // a thread that ended meanwhile
            }
            names.insert(name.trimmingCharacters(in: .newlines))
        }
        // The kernel keeps 15 bytes of a name.
        for expected in ["tokenet-signals", "tokenet-parent-", "tokenet-notific", "rpc"] {
            #expect(names.contains(expected), "no thread named \(expected) among \(names.sorted())")
        }

        kill(pid, SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.reason == .exit && result.status == 0, "\(result.stderr)")
    }
}
