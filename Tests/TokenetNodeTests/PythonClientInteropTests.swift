import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

@testable import TokenetNode

/// An independent client — Python's `ssl` module and `protoc --python_out` classes, written from Protos/README.md
/// alone (`Tools/interop/tokenet_client.py`) — against real `tsp-node`s (one with short keepalive and idle
/// timeouts) and a `tokenet-bench server` over mutual TLS: the specification is enough to talk to Tokenet, and
/// Tokenet keeps to it, down to its timeouts and its graceful shutdown.
@Suite struct PythonClientInteropTests {
    /// The checks' output and how the node they stopped ended, gathered off the cooperative pool (`offThePool`).
    struct Outcome: Sendable {
        var result: ProcessResult
        var nodeExitedCleanly: Bool
        var nodeLog: String
    }

    @Test func theIndependentClientPassesEveryCheck() async throws {
        let outcome = try await offThePool { try Self.run() }
        let result = outcome.result
        let lines = result.stdout.split(separator: "\n")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(lines.filter { $0.hasPrefix("ok ") }.count == 35, "\(result.stdout)")
        #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(result.stdout)")
        #expect(outcome.nodeExitedCleanly)
        // The node logged the connection errors the client caused, and nothing worse than that.
        #expect(!outcome.nodeLog.contains(" error "), "\(outcome.nodeLog)")
    }

    static func run() throws -> Outcome {
        let pki = DevelopmentPKI.shared
        let tls = ["--cert", pki.path("tsp.pem"), "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem")]
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        let node = try LaunchedProcess(
            "tsp-node", ["--listen", "127.0.0.1:0", "--data-dir", data.path("data"), "--ready-file", readyFile] + tls)
        defer { Self.stop(node.process) }
        let timersReadyFile = data.path("timers-ready.json")
        let timersNode = try LaunchedProcess(
            "tsp-node",
            [
                "--listen", "127.0.0.1:0", "--data-dir", data.path("timers-data"), "--ready-file", timersReadyFile,
                "--keepalive", "0.2", "--keepalive-timeout", "0.3", "--idle-timeout", "1",
            ] + tls)
        defer { Self.stop(timersNode.process) }
        let bench = try LaunchedProcess("tokenet-bench", ["server", "--lifetime", "300"] + tls)
        defer { Self.stop(bench.process) }

        let nodeAddress = try Self.waitFor(node.process, "tsp-node's ready file") {
            FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
        }
        let timersAddress = try Self.waitFor(timersNode.process, "the second tsp-node's ready file") {
            FileManager.default.fileExists(atPath: timersReadyFile)
                ? try ReadyFile.read(from: timersReadyFile).listen : nil
        }
        // `tokenet-bench server` prints `PORT n ECHO m` once it listens.
        let benchPort = try Self.waitFor(bench.process, "tokenet-bench server's port") { () -> String? in
            let output = (try? String(contentsOfFile: bench.directory.path("stdout"), encoding: .utf8)) ?? ""
            let words = output.split(whereSeparator: \.isWhitespace)
            guard let index = words.firstIndex(of: "PORT"), index + 1 < words.count else { return nil }
            return String(words[index + 1])
        }

        let result = try Self.runCheck([
            "--node", nodeAddress, "--bench", "127.0.0.1:\(benchPort)", "--timers-node", timersAddress,
            "--pki", pki.directory.path,
            // Last, the client stops the node with SIGTERM and checks its graceful shutdown.
            "--shutdown-pid", "\(node.process.pid)",
        ])
        node.process.waitUntilExit(killingAfter: 30)
        return Outcome(
            result: result,
            nodeExitedCleanly: node.process.termination?.isCleanExit == true,
            nodeLog: try String(contentsOfFile: node.directory.path("stderr"), encoding: .utf8))
    }

    /// Runs `script` (a path under the package root) with Debian's interpreter (`LaunchedProcess(python:)`).
    static func runCheck(
        _ arguments: [String], script: String = "Tools/interop/check-python-client"
    ) throws -> ProcessResult {
        try LaunchedProcess(python: script, arguments).waitForExit(limit: 120)
    }

    /// Polls `probe` until it gives a value, for up to 180 s and while `process` runs.
    static func waitFor<Value>(
        _ process: SpawnedProcess, _ what: String, _ probe: () throws -> Value?
    ) throws -> Value {
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline, process.isRunning {
            if let value = try probe() { return value }
            usleep(20_000)
        }
        throw NotReady(what: what, running: process.isRunning)
    }

    /// `waitFor` for async tests: sleeps between polls instead of holding a thread of the cooperative pool.
    static func waitFor<Value>(
        _ process: SpawnedProcess, _ what: String, _ probe: () throws -> Value?
    ) async throws -> Value {
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline, process.isRunning {
            if let value = try probe() { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw NotReady(what: what, running: process.isRunning)
    }

    struct NotReady: Error, CustomStringConvertible {
        var what: String
        var running: Bool
        var description: String { "no \(what) (the process \(running ? "is still running" : "exited"))" }
    }

    static func stop(_ process: SpawnedProcess) {
        process.send(SIGTERM)
        process.waitUntilExit(killingAfter: 30)
    }
}
