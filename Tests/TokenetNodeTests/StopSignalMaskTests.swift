import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// In a running node one thread accepts SIGTERM and SIGINT, the one that relays them to the node; every other
/// thread holds them back. A thread that accepted them with no handler of its own lost them or was killed by them,
/// and their arrival interrupted its system calls.
@Suite struct StopSignalMaskTests {
    @Test(.timeLimit(.minutes(3))) func onlyTheSignalThreadOfARunningNodeAcceptsStopSignals() async throws {
        let scratch = try TemporaryDirectory()
        let (node, _, _) = try await LaunchedProcess.plaintextTSPNode(in: scratch)
        defer { node.process.send(SIGTERM) }
        let pid = node.process.pid
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var accepting: [String] = []
        for task in tasks {
            let directory = "/proc/\(pid)/task/\(task)"
            guard let status = try? String(contentsOfFile: "\(directory)/status", encoding: .utf8),
                let name = try? String(contentsOfFile: "\(directory)/comm", encoding: .utf8)
            else { continue }  // a thread that ended meanwhile
            let blockedLine = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
            let blocked = try #require(
                blockedLine.flatMap { UInt64($0.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) })
            let held = StopSignalWatcher.stopSignals.allSatisfy { blocked & (1 << UInt64($0 - 1)) != 0 }
            if !held { accepting.append(name.trimmingCharacters(in: .newlines)) }
        }
        #expect(tasks.count > 3, "\(tasks)")
        #expect(accepting == ["tokenet-signals"], "threads that accept SIGTERM or SIGINT: \(accepting)")

        kill(pid, SIGTERM)
        let result = try await node.waitForExit()
        #expect(result.reason == .exit && result.status == 0, "\(result.stderr)")
    }
}
