import Foundation
import TokenetNode
import TokenetTestSupport
import TokenetTransport

/// The package's built executables, found next to the test bundle (`swift build --build-tests` builds them).
enum Executables {
    static let packageRoot = PackageRoot.url

    static func url(of name: String) throws -> URL {
        do {
            return try BuiltExecutables.url(of: name)
        } catch {
            throw LiveTestError("\(error)")
        }
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
        path = try TestScratch.path("wallet")
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// A directory whose `data` folder (a node's --data-dir) holds the given files; nil contents are skipped.
    convenience init(data files: [String: String?]) throws {
        try self.init()
        try FileManager.default.createDirectory(atPath: file("data"), withIntermediateDirectories: true)
        for case (let name, let contents?) in files {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file("data/" + name)))
        }
    }

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
    let termination = try SpawnedProcess(
        try Executables.url(of: name).path, arguments, environment: environment, standardInput: .nullDevice,
        standardOutput: .file(scratch.file("stdout")), standardError: .file(scratch.file("stderr"))
    ).waitUntilExit(killingAfter: limit)
    return CommandResult(
        status: termination.status,
        stdout: try String(contentsOfFile: scratch.file("stdout"), encoding: .utf8),
        stderr: try String(contentsOfFile: scratch.file("stderr"), encoding: .utf8))
}

/// A node process started with its role's certificate, stopped (SIGTERM, then waited for) on deinit.
/// Immutable once started; `SpawnedProcess` itself is safe to wait on from any thread.
final class NodeProcess: @unchecked Sendable {
    let process: SpawnedProcess
    let directory: ScratchDirectory
    let listen: String

    /// Starts `name` listening on `listen` (a free port by default), keeping its data in `directory`.
    init(
        _ name: String, role: String, pki: String, listen: String = "127.0.0.1:0", directory: ScratchDirectory? = nil,
        extra: [String] = []
    ) throws {
        self.directory = try directory ?? ScratchDirectory()
        let ready = self.directory.file("ready-\(UUID().uuidString).json")
        process = try SpawnedProcess(
            try Executables.url(of: name).path,
            [
                "--listen", listen, "--data-dir", self.directory.file("data"), "--ready-file", ready,
                "--cert", "\(pki)/\(role).pem", "--key", "\(pki)/\(role).key", "--ca", "\(pki)/ca.pem",
            ] + extra,
            standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .file(self.directory.file("stderr"))
        )
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: ready) {
            guard process.isRunning, Date() < deadline else {
                process.send(SIGTERM)
                process.waitUntilExit()
                let log = (try? String(contentsOfFile: self.directory.file("stderr"), encoding: .utf8)) ?? ""
                throw LiveTestError("\(name) did not become ready: \(log)")
            }
            usleep(20_000)
        }
        self.listen = try ReadyFile.read(from: ready).listen
    }

    var stderr: String { (try? String(contentsOfFile: directory.file("stderr"), encoding: .utf8)) ?? "" }

    /// Stops the node with SIGTERM and waits for it; its data directory stays for a restart.
    func stop() {
        process.send(SIGTERM)
        // A node that never exits is killed, so its test fails instead of hanging the suite.
        process.waitUntilExit(killingAfter: 60)
    }

    /// Stopped without waiting here: a thread of its own waits for the exit, holding the data directory until then.
    deinit {
        if process.isRunning {
            process.send(SIGTERM)
            reapOffThePool(process, killingAfter: 60, keeping: directory)
        }
    }
}

/// The shared development PKI (`DevelopmentPKI`).
enum TestPKI {
    /// The directory holding ca.pem and the {tsp,issuer,wallet,operator}.{pem,key} files.
    static func directory() throws -> String { DevelopmentPKI.shared.directory.path }

    /// The operator's identity as `tokenet` flags.
    static func operatorFlags() throws -> [String] {
        let pki = try directory()
        return ["--cacert", pki + "/ca.pem", "--cert", pki + "/operator.pem", "--key", pki + "/operator.key"]
    }
}

/// A loopback address no one listens on right now (see `freeLoopbackPort`).
func freeLoopbackAddress() throws -> String {
    "127.0.0.1:\(try freeLoopbackPort())"
}

/// Runs the built `tokenet` off the cooperative pool.
func runTokenet(_ arguments: [String]) async throws -> CommandResult {
    try await offThePool { try runExecutable("tokenet", arguments) }
}
