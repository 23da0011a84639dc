import Foundation
import TokenetNode
import TokenetTransport

/// A child process with its output in files and exit waits that are always bounded.
///
/// Output goes to files rather than pipes: a chatty child can never block on a full pipe, and the files stay
/// behind (with `--keep-dir`) for anyone investigating a failure. It is started through posix_spawn
/// (`SpawnedProcess`), in a process group of its own, so a Ctrl-C at the terminal reaches only this command, which
/// then stops the nodes itself.
final class ChildProcess: @unchecked Sendable {
    // `process` is set by `launch()`, before the child is shared, and only read afterwards.
    let name: String
    let stdoutURL: URL
    let stderrURL: URL
    private let executable: URL
    private let arguments: [String]
    private let environment: [String: String]?
    /// Signals the child starts with blocked (`SpawnedProcess`): a node's stop signals.
    private let blockedSignals: [Int32]
    private var process: SpawnedProcess?

    /// Output goes to `logDirectory/LOGNAME.stdout.log` and `.stderr.log`; `logName` is the name unless given (a node
    /// started again gets logs of its own, so the first run's stay). `environment`, when given, is the whole
    /// environment of the process; otherwise it inherits this one's.
    init(
        name: String, executable: URL, arguments: [String], logDirectory: URL, logName: String? = nil,
        environment: [String: String]? = nil, blockedSignals: [Int32] = []
    ) {
        self.blockedSignals = blockedSignals
        self.name = name
        self.stdoutURL = logDirectory.appendingPathComponent("\(logName ?? name).stdout.log")
        self.stderrURL = logDirectory.appendingPathComponent("\(logName ?? name).stderr.log")
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }

    var pid: Int32 { process?.pid ?? 0 }

    func launch() throws(CLIError) {
        for url in [stdoutURL, stderrURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
            throw CLIError(
                .setup, "cannot start \(name) (\(executable.path))", cause: DemoCause("cannot create \(url.path)"))
        }
        do {
            process = try SpawnedProcess(
                executable.path, arguments, environment: environment, standardInput: .nullDevice,
                standardOutput: .file(stdoutURL.path), standardError: .file(stderrURL.path),
                blockedSignals: blockedSignals)
        } catch {
            throw CLIError(.setup, "cannot start \(name) (\(executable.path))", cause: DemoCause(error.reason))
        }
    }

    /// Waits up to `seconds` for the process to exit; true when it did.
    func waitForExit(seconds: Double) -> Bool { process?.waitForExit(seconds: seconds) ?? false }

    var hasExited: Bool { waitForExit(seconds: 0) }

    /// Sends `signal` unless the process has exited (and its pid may be another process's).
    func send(_ signal: Int32) { process?.send(signal) }

    /// Sends `signal` to the process and the processes it started (`SpawnedProcess.sendToGroup`).
    func sendToGroup(_ signal: Int32) { process?.sendToGroup(signal) }

    /// Waits up to `seconds` until SIGSTOP has taken effect; true when it has (`SpawnedProcess.waitUntilStopped`).
    func waitUntilStopped(seconds: Double) -> Bool { process?.waitUntilStopped(seconds: seconds) ?? false }

    /// How the process ended; call only after `waitForExit` returned true.
    var outcome: String { process?.termination?.description ?? "is still running" }

    var exitedCleanly: Bool { process?.termination?.isCleanExit ?? false }

    /// The last lines of the process's stderr, indented, for failure reports.
    func stderrTail(lines count: Int = 30) -> String {
        let text = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").suffix(count)
        guard !lines.isEmpty else { return "    | (nothing on stderr)" }
        return lines.map { "    | \($0)" }.joined(separator: "\n")
    }
}

/// Wraps a non-Sendable underlying error by its description: for a file the system refused, its reason ("No such
/// file or directory"), not Foundation's whole `NSCocoaErrorDomain … UserInfo={…}` (`DescribedError`).
struct DemoCause: Error, CustomStringConvertible, Sendable {
    var description: String

    init(_ error: any Error) { description = DescribedError(error).description }
    init(_ text: String) { description = text }
}
