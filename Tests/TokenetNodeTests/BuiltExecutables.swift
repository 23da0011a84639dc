import Foundation

/// Finds the package's built executables for tests that run them as separate processes.
///
/// They sit next to the test bundle (`.build/<triple>/debug`); `.build/debug` under the package root is the
/// fallback. `swift build --build-tests` (which Tools/test runs) builds them.
enum BuiltExecutables {
    static func url(of name: String) throws -> URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var candidates = [packageRoot.appendingPathComponent(".build/debug")]
        // The test binary lives inside `X.xctest` (a bundle directory on some platforms, a file on Linux).
        var directory = testBinary.deletingLastPathComponent()
        while directory.path != "/" {
            candidates.insert(directory, at: 0)
            if !directory.path.contains(".xctest") { break }
            directory = directory.deletingLastPathComponent()
        }
        for candidate in candidates {
            let binary = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: binary.path) { return binary }
        }
        throw MissingExecutable(name: name, searched: candidates.map(\.path))
    }

    struct MissingExecutable: Error, CustomStringConvertible {
        var name: String
        var searched: [String]
        var description: String {
            "\(name) is not built (looked in \(searched.joined(separator: ", "))); run swift build --build-tests"
        }
    }
}

/// A finished child process.
struct ProcessResult {
    var status: Int32
    var reason: Process.TerminationReason
    var stdout: String
    var stderr: String
}

/// A child process whose output goes to files, so it can never block on a full pipe.
final class LaunchedProcess {
    let process = Process()
    let directory: TemporaryDirectory

    init(_ name: String, _ arguments: [String]) throws {
        directory = try TemporaryDirectory()
        process.executableURL = try BuiltExecutables.url(of: name)
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: directory.path("stdout"), contents: nil)
        _ = FileManager.default.createFile(atPath: directory.path("stderr"), contents: nil)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: directory.url.appendingPathComponent("stdout"))
        process.standardError = try FileHandle(forWritingTo: directory.url.appendingPathComponent("stderr"))
        try process.run()
    }

    /// Runs to completion.
    static func run(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try LaunchedProcess(name, arguments).waitForExit()
    }

    /// Waits for the process; one that outlives `limit` seconds is killed, so a hung child fails the test (its
    /// termination reason becomes `.uncaughtSignal`) instead of hanging the suite.
    func waitForExit(limit: Double = 120) throws -> ProcessResult {
        process.waitUntilExit(killingAfter: limit)
        return ProcessResult(
            status: process.terminationStatus, reason: process.terminationReason,
            stdout: try String(contentsOfFile: directory.path("stdout"), encoding: .utf8),
            stderr: try String(contentsOfFile: directory.path("stderr"), encoding: .utf8))
    }
}

extension Process {
    /// Waits for the process; one that outlives `limit` seconds is killed, so a hung child fails its test (its
    /// termination reason becomes `.uncaughtSignal`) instead of hanging the suite.
    func waitUntilExit(killingAfter limit: Double) {
        let pid = processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        waitUntilExit()
        watchdog.cancel()
    }
}
