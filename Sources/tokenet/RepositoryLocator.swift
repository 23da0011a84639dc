import Foundation

/// Finds the files the demo needs: the node executables and, when available, the repository's Tools/.
enum RepositoryLocator {
    /// The directory holding the running `tokenet` binary; the node executables are built next to it.
    static var executableDirectory: URL {
        let linked = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if FileManager.default.fileExists(atPath: linked.path), linked.lastPathComponent != "exe" {
            return linked.deletingLastPathComponent()
        }
        let fallback = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.resolvingSymlinksInPath()
        return fallback.deletingLastPathComponent()
    }

    /// The repository root: the nearest ancestor of the executable (normally `.build/debug`), or else of the
    /// working directory, that holds both `Package.swift` and `Protos/`.
    static var repositoryRoot: URL? {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        for start in [executableDirectory, cwd] {
            var directory = start.standardizedFileURL
            while true {
                let package = directory.appendingPathComponent("Package.swift").path
                let protos = directory.appendingPathComponent("Protos").path
                if FileManager.default.fileExists(atPath: package), FileManager.default.fileExists(atPath: protos) {
                    return directory
                }
                let parent = directory.deletingLastPathComponent()
                if parent.path == directory.path { break }
                directory = parent
            }
        }
        return nil
    }

    /// The issuer's cards (`Tools/fixtures/issuer.json`) for a command whose nodes must provision (`scenario`,
    /// `up`; the demo runs its health checks without them), or why they cannot be had: without them the issuer has
    /// no profile, never registers with the TSP, and the command failed only after waiting 30 s for it, saying
    /// nothing of the reason.
    static func issuerFixture(for command: String) throws(CLIError) -> String {
        guard let root = repositoryRoot else {
            throw CLIError(
                .setup,
                "\(command): the Tokenet repository was not found (a directory holding Package.swift and Protos/, "
                    + "above \(executableDirectory.path) or the working directory): the nodes take their certificates "
                    + "(Tools/gen-certs) and the issuer's cards (\(DemoCommand.fixturePath)) from it; run tokenet from "
                    + "the repository's directory")
        }
        let fixture = root.appendingPathComponent(DemoCommand.fixturePath).path
        guard FileManager.default.fileExists(atPath: fixture) else {
            throw CLIError(.setup, "\(command): the issuer's cards are missing: \(fixture) does not exist")
        }
        return fixture
    }
}
