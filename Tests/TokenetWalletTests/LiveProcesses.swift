import Foundation
import TokenetNode

/// The package's built executables, found next to the test bundle (`swift build --build-tests` builds them).
enum Executables {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func url(of name: String) throws -> URL {
        var candidates = [packageRoot.appendingPathComponent(".build/debug")]
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.path != "/" {
            candidates.insert(directory, at: 0)
            if !directory.path.contains(".xctest") { break }
            directory = directory.deletingLastPathComponent()
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path + "/" + name) {
            return candidate.appendingPathComponent(name)
        }
        throw LiveTestError("\(name) is not built; run swift build --build-tests")
    }
}

struct LiveTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory, removed when the value goes away.
final class ScratchDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-wallet-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// What a finished command printed.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a built executable to completion with output in files; a run longer than `limit` seconds is killed, so a
/// hang fails the test instead of the suite.
func runExecutable(
    _ name: String, _ arguments: [String], environment: [String: String] = [:], limit: Double = 90
) throws -> CommandResult {
    let scratch = try ScratchDirectory()
    let process = Process()
    process.executableURL = try Executables.url(of: name)
    process.arguments = arguments
    process.environment = environment
    for stream in ["stdout", "stderr"] {
        _ = FileManager.default.createFile(atPath: scratch.file(stream), contents: nil)
    }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle(forWritingAtPath: scratch.file("stdout"))
    process.standardError = FileHandle(forWritingAtPath: scratch.file("stderr"))
    try process.run()
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
    process.waitUntilExit()
    watchdog.cancel()
    return CommandResult(
        status: process.terminationStatus,
        stdout: try String(contentsOfFile: scratch.file("stdout"), encoding: .utf8),
        stderr: try String(contentsOfFile: scratch.file("stderr"), encoding: .utf8))
}

/// A node process started with its role's certificate, stopped (SIGTERM, then waited for) on deinit.
final class NodeProcess {
    let process = Process()
    let directory: ScratchDirectory
    let listen: String

    init(_ name: String, role: String, pki: String, extra: [String] = []) throws {
        directory = try ScratchDirectory()
        let ready = directory.file("ready.json")
        process.executableURL = try Executables.url(of: name)
        process.arguments =
            [
                "--listen", "127.0.0.1:0", "--data-dir", directory.file("data"), "--ready-file", ready,
                "--cert", "\(pki)/\(role).pem", "--key", "\(pki)/\(role).key", "--ca", "\(pki)/ca.pem",
            ] + extra
        _ = FileManager.default.createFile(atPath: directory.file("stderr"), contents: nil)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: directory.file("stderr"))
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: ready) {
            guard process.isRunning, Date() < deadline else {
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
                let log = (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? ""
                throw LiveTestError("\(name) did not become ready: \(log)")
            }
            usleep(20_000)
        }
        listen = try ReadyFile.read(from: ready).listen
    }

    var stderr: String { (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// Development certificates from Tools/gen-certs, made once per test process.
enum TestPKI {
    private static let made: Result<ScratchDirectory, LiveTestError> = {
        do {
            let directory = try ScratchDirectory()
            let process = Process()
            process.executableURL = Executables.packageRoot.appendingPathComponent("Tools/gen-certs")
            process.arguments = [directory.file("pki")]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { return .failure(LiveTestError("Tools/gen-certs failed")) }
            return .success(directory)
        } catch {
            return .failure(LiveTestError("cannot run Tools/gen-certs: \(error)"))
        }
    }()

    /// The directory holding ca.pem and the {tsp,issuer,wallet,operator}.{pem,key} files.
    static func directory() throws -> String { try made.get().file("pki") }

    /// The operator's identity as `tokenet` flags.
    static func operatorFlags() throws -> [String] {
        let pki = try directory()
        return ["--cacert", pki + "/ca.pem", "--cert", pki + "/operator.pem", "--key", pki + "/operator.key"]
    }
}
