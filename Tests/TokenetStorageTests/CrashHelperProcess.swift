import Foundation
import TokenetTestSupport
import TokenetTransport

/// A running `tokenet-storage-crash-helper`, its stdout and stderr in files so it never blocks on a pipe. Used by one
/// thread at a time (the test's, then the one `offThePool` lends it).
final class CrashHelperProcess: @unchecked Sendable {
    private let process: SpawnedProcess
    private let stdoutPath: String
    private let stderrPath: String

    init(databasePath: String, rowsPerTransaction: Int, outputDirectory: TemporaryDirectory, round: Int) throws {
        stdoutPath = outputDirectory.path("helper-\(round).out")
        stderrPath = outputDirectory.path("helper-\(round).err")
        process = try SpawnedProcess(
            try Self.executable().path, [databasePath, String(rowsPerTransaction)], standardInput: .nullDevice,
            standardOutput: .file(stdoutPath), standardError: .file(stderrPath))
    }

    /// The transaction numbers the helper reported committed so far (complete lines only).
    func committed() throws -> [Int] {
        let text = try String(contentsOfFile: stdoutPath, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().compactMap { Int($0) }
    }

    var errorOutput: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Polls until the helper has reported transaction `number` (0: at once), then pauses `pauseMicroseconds` and
    /// sends SIGKILL (`sigkill`). Blocking: run it off the test runner's threads (`offThePool`), which a loaded full
    /// run left busy for minutes, past the 120 s the helper waits before it stops by itself. Throws when the helper
    /// exits on its own, or makes no progress for `stallLimit` seconds (a hang guard, not a timing assertion).
    func killAfterCommit(atLeast number: Int, pauseMicroseconds: UInt32, stallLimit: Double = 60) throws -> Bool {
        var last = try committed().last ?? 0
        var lastProgress = Date()
        while last < number {
            guard process.isRunning else {
                throw HelperFailure(description: "the helper exited on its own: \(errorOutput)")
            }
            usleep(500)
            let now = try committed().last ?? 0
            if now > last {
                last = now
                lastProgress = Date()
            } else if Date().timeIntervalSince(lastProgress) > stallLimit {
                throw HelperFailure(description: "the helper made no progress past transaction \(last)")
            }
        }
        if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        return sigkill()
    }

    /// Sends SIGKILL and waits; true when the helper died of that signal (rather than exiting before it).
    func sigkill() -> Bool {
        process.send(SIGKILL)
        return process.waitUntilExit() == .init(reason: .uncaughtSignal, status: SIGKILL)
    }

    struct HelperFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// The helper binary sits next to the test binary (`.build/<triple>/debug`); `swift build --build-tests`
    /// builds it.
    private static func executable() throws -> URL {
        do {
            return try BuiltExecutables.url(of: "tokenet-storage-crash-helper")
        } catch {
            throw HelperFailure(description: "\(error)")
        }
    }
}
