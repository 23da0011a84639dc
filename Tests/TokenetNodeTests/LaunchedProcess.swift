import Foundation
import Testing
import TokenetNode
import TokenetTestSupport
import TokenetTransport

/// A finished child process.
struct ProcessResult: Sendable {
    var status: Int32
    var reason: SpawnedProcess.Termination.Reason
    var stdout: String
    var stderr: String

    /// A party command's stderr after a failed call without its last line, `(trace ID)`, which names the call's
    /// trace id; the whole stderr when that line is not there.
    var stderrWithoutTrace: String {
        guard let match = stderr.firstMatch(of: /\(trace [0-9a-f]{8,32}\)\n\z/) else { return stderr }
        return String(stderr[..<match.range.lowerBound])
    }
}

/// A child process whose output goes to files, so it can never block on a full pipe.
///
/// Sendable so that an async test can wait for it off the cooperative pool: its stored properties are constants, and
/// a `SpawnedProcess` may be waited for and signalled from any thread.
final class LaunchedProcess: @unchecked Sendable {
    let process: SpawnedProcess
    let directory: TemporaryDirectory

    convenience init(_ name: String, _ arguments: [String]) throws {
        try self.init(executable: try BuiltExecutables.url(of: name), arguments)
    }

    /// Runs a script of the package (such as `Tools/interop/python-issuer`) with Debian's python3, where
    /// Tools/setup installs python3-protobuf and python3-cryptography (another `python3` on PATH may lack them).
    convenience init(python script: String, _ arguments: [String]) throws {
        try self.init(executable: URL(fileURLWithPath: "/usr/bin/python3"), [PackageRoot.path(script)] + arguments)
    }

    init(executable: URL, _ arguments: [String]) throws {
        directory = try TemporaryDirectory()
        process = try SpawnedProcess(
            executable.path, arguments, standardInput: .nullDevice, standardOutput: .file(directory.path("stdout")),
            standardError: .file(directory.path("stderr")))
    }

    /// Runs a built executable under `nice -n 10`, with every process it starts: the scenario and sandbox tests
    /// start whole sets of nodes, which must not take the CPU from the suite's own timing-sensitive tests.
    convenience init(niced name: String, _ arguments: [String]) throws {
        try self.init(
            executable: URL(fileURLWithPath: "/usr/bin/nice"),
            ["-n", "10", try BuiltExecutables.url(of: name).path] + arguments)
    }

    /// `run(_:_:)` under `nice -n 10` (`init(niced:_:)`), killed after `limit` seconds (`waitForExit(limit:)`).
    static func runNiced(_ name: String, _ arguments: [String], limit: Double = 120) async throws -> ProcessResult {
        try await offThePool { try LaunchedProcess(niced: name, arguments).waitForExit(limit: limit) as ProcessResult }
    }

    /// Runs to completion.
    static func run(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try LaunchedProcess(name, arguments).waitForExit()
    }

    /// Runs to completion, waiting off the cooperative pool (`offThePool`): what async tests call, so that a long
    /// child (the demo, a benchmark) never holds one of the pool's few threads.
    static func run(_ name: String, _ arguments: [String]) async throws -> ProcessResult {
        try await offThePool { try LaunchedProcess.run(name, arguments) as ProcessResult }
    }

    /// `waitForExit(limit:)` for async tests, waiting off the cooperative pool (`offThePool`): a test that blocked
    /// one of the pool's few threads for a node's exit stalled every other test's calls meanwhile.
    func waitForExit(limit: Double = 120) async throws -> ProcessResult {
        try await offThePool { [self] () throws -> ProcessResult in try self.waitForExit(limit: limit) }
    }

    /// Waits for the process; one that outlives `limit` seconds is killed, so a hung child fails the test (its
    /// termination reason becomes `.uncaughtSignal`) instead of hanging the suite. It is killed with its process
    /// group (its own): the nodes the live dissector check's script starts outlived the script killed alone.
    func waitForExit(limit: Double = 120) throws -> ProcessResult {
        if !process.waitForExit(seconds: limit), !process.sendToGroup(SIGKILL) { process.send(SIGKILL) }
        let termination = process.waitUntilExit()
        return ProcessResult(
            status: termination.status, reason: termination.reason,
            stdout: try String(contentsOfFile: directory.path("stdout"), encoding: .utf8),
            stderr: try String(contentsOfFile: directory.path("stderr"), encoding: .utf8))
    }
}

extension LaunchedProcess {
    /// A plaintext `tsp-node` on a free port with `arguments` added, once it is ready, and where it listens. It
    /// stops when the test process ends (`--parent-pid`), so a test that fails before stopping it leaves no node.
    static func plaintextTSPNode(in scratch: TemporaryDirectory, _ arguments: [String] = []) async throws
        -> (node: LaunchedProcess, readyFile: String, address: HostPort)
    {
        let readyFile = scratch.path("ready.json")
        let node = try LaunchedProcess(
            "tsp-node",
            [
                "--plaintext", "--listen", "127.0.0.1:0", "--data-dir", scratch.path("data"), "--ready-file", readyFile,
                "--parent-pid", "\(getpid())",
            ] + arguments)
        do {
            let deadline = Date().addingTimeInterval(180)
            while !FileManager.default.fileExists(atPath: readyFile) {
                guard node.process.isRunning, Date() < deadline else {
                    throw NodeNotReady(running: node.process.isRunning)
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return (node, readyFile, try #require(HostPort(parsing: try ReadyFile.read(from: readyFile).listen)))
        } catch {
            node.process.send(SIGTERM)
            throw error
        }
    }

    struct NodeNotReady: Error, CustomStringConvertible {
        var running: Bool
        var description: String { "tsp-node did not become ready (running: \(running))" }
    }

    /// A `tsp-node` over mutual TLS with the development PKI, on a free port of `listen`'s address, its data and
    /// ready file (`ready.json`) in `data`. It also stops when the test process ends (`--parent-pid`), so that a
    /// test that fails before stopping it leaves no node behind.
    static func tspNode(
        in data: TemporaryDirectory, listen: String = "127.0.0.1:0", _ arguments: [String] = []
    ) throws -> LaunchedProcess {
        let pki = DevelopmentPKI.shared
        return try LaunchedProcess(
            "tsp-node",
            [
                "--listen", listen, "--data-dir", data.path("data"), "--ready-file", data.path("ready.json"),
                "--cert", pki.path("tsp.pem"), "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem"),
                "--parent-pid", "\(getpid())",
            ] + arguments)
    }
}
