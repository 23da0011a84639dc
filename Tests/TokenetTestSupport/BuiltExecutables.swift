import Foundation

/// The package's root directory, found from this file's own path.
public enum PackageRoot {
    public static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A file under the root, such as `Tools/fixtures/issuer.json`.
    public static func path(_ relative: String) -> String { url.appendingPathComponent(relative).path }
}

/// Finds the package's built executables for tests that run them as separate processes.
///
/// They sit next to the test bundle (`.build/<triple>/debug`); `.build/debug` under the package root is the
/// fallback. `swift build --build-tests` (which Tools/test runs) builds them.
public enum BuiltExecutables {
    public static func url(of name: String) throws -> URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var candidates = [PackageRoot.url.appendingPathComponent(".build/debug")]
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

    public struct MissingExecutable: Error, CustomStringConvertible {
        public var name: String
        public var searched: [String]
        public var description: String {
            "\(name) is not built (looked in \(searched.joined(separator: ", "))); run swift build --build-tests"
        }
    }
}

/// A loopback port no one listens on right now (another process may take it before the caller binds it; callers
/// that can, retry).
public func freeLoopbackPort() throws -> UInt16 {
    // From below the kernel's ephemeral range: a port the kernel picked for a socket bound to port 0 may be handed
    // to the next such socket (any listener of the suite, running in parallel) or to an outgoing connection before
    // the node binds it. Below the range `tokenet` reserves its sandboxes' ports from (20000–32767), as `FreePorts`.
    for _ in 0..<200 {
        let port = UInt16.random(in: 14_000...19_999)
        guard FreePorts.handOut(Int(port)) else { continue }
        if let bound = try? bindLoopback(port) { return bound }
    }
    return try bindLoopback(0)
}

/// Binds 127.0.0.1:`port` (0 for any), closes at once and returns the port that was bound.
private func bindLoopback(_ port: UInt16) throws -> UInt16 {
    try LoopbackSocket.RefusingPort(port: port).port
}
