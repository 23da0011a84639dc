import Dispatch
import Foundation
import TokenetNode

/// A child process with its output in files and exit waits that are always bounded.
///
/// Output goes to files rather than pipes: a chatty child can never block on a full pipe, and the files stay
/// behind (with `--keep-dir`) for anyone investigating a failure.
final class ChildProcess: @unchecked Sendable {
    // `process` is configured before `run()` and only read afterwards; `exited` is thread-safe.
    let name: String
    let stdoutURL: URL
    let stderrURL: URL
    private let process = Process()
    private let exited = DispatchSemaphore(value: 0)

    /// Output goes to `logDirectory/LOGNAME.stdout.log` and `.stderr.log`; `logName` is the name unless given (a node
    /// started again gets logs of its own, so the first run's stay).
    init(name: String, executable: URL, arguments: [String], logDirectory: URL, logName: String? = nil) {
        self.name = name
        self.stdoutURL = logDirectory.appendingPathComponent("\(logName ?? name).stdout.log")
        self.stderrURL = logDirectory.appendingPathComponent("\(logName ?? name).stderr.log")
        process.executableURL = executable
        process.arguments = arguments
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
    }

    var pid: Int32 { process.processIdentifier }

    func launch() throws(CLIError) {
        do {
            for url in [stdoutURL, stderrURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
                throw DemoCause("cannot create \(url.path)")
            }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
            process.standardError = try FileHandle(forWritingTo: stderrURL)
            try process.run()
        } catch {
            throw CLIError(
                .setup, "cannot start \(name) (\(process.executableURL?.path ?? "?"))", cause: DemoCause(error))
        }
    }

    /// Waits up to `seconds` for the process to exit; true when it did.
    func waitForExit(seconds: Double) -> Bool {
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()  // Keep the semaphore "open" for later waits.
        process.waitUntilExit()
        return true
    }

    var hasExited: Bool { waitForExit(seconds: 0) }

    func send(_ signal: Int32) {
        guard !hasExited else { return }
        kill(pid, signal)
    }

    /// How the process ended; call only after `waitForExit` returned true.
    var outcome: String {
        switch process.terminationReason {
        case .exit: return "exited with status \(process.terminationStatus)"
        case .uncaughtSignal: return "was killed by signal \(process.terminationStatus)"
        @unknown default: return "ended with status \(process.terminationStatus)"
        }
    }

    var exitedCleanly: Bool { process.terminationReason == .exit && process.terminationStatus == 0 }

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
