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
}
