import Foundation
import TokenetNode

/// What `tokenet demo` and `tokenet scenario` share to run the three nodes on this machine: a private workspace, the
/// development PKI, nodes started as child processes and seen ready, and their stop. Every wait is bounded by
/// `timeout` and gives way to a stop signal (`interruption`).
struct Sandbox: Sendable {
    /// Upper bound in seconds for each wait: certificate generation, one node becoming ready, one node exiting.
    var timeout: Double
    let interruption: DemoInterruption

    /// A `--timeout` value of `command` (demo, scenario, up): seconds above 0 and at most an hour.
    static func timeout(_ text: String, command: String) throws(CLIError) -> Double {
        guard let value = PlainDecimal.parse(text), value > 0, value <= 3600 else {
            throw CLIError(.usage, "\(command): --timeout: expected seconds above 0 and at most 3600, got '\(text)'")
        }
        return value
    }

    /// A fresh private directory under $TMPDIR.
    func makeWorkspace(prefix: String) throws(CLIError) -> URL {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw CLIError(
                .setup, "cannot create a temporary directory under \(base)",
                cause: DemoCause(String(cString: strerror(errno))))
        }
        return URL(fileURLWithPath: String(cString: created))
    }

    /// Sends SIGTERM to every node, waits for each (killing any that outlive the timeout) and reports exits.
    func stop(_ processes: [ChildProcess]) -> Bool {
        guard !processes.isEmpty else { return true }
        printOut("Stopping nodes (SIGTERM)")
        for process in processes { process.send(SIGTERM) }
        var allClean = true
        for process in processes {
            if !process.waitForExit(seconds: timeout) {
                process.send(SIGKILL)
                _ = process.waitForExit(seconds: 5)
                printOut("  \(process.name) pid=\(process.pid) did not stop within \(timeout) s and was killed")
                allClean = false
                continue
            }
            printOut("  \(process.name) pid=\(process.pid) \(process.outcome)")
            if !process.exitedCleanly {
                allClean = false
                printOut(process.stderrTail())
            }
        }
        return allClean
    }
}
