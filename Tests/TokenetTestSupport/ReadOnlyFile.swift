import Foundation
import TokenetTransport

/// Makes a file one this process cannot write, for tests of what a node does with such a file, and undoes it.
///
/// File modes do not stop root, which the CI runs the tests as: as root the file is marked immutable
/// (`chattr +i`) as well, where the file system allows it.
public enum ReadOnlyFile {
    /// Makes `path` unwritable; false when that is not possible here (the test then has nothing to check).
    public static func make(_ path: String) -> Bool {
        guard chmod(path, 0o444) == 0 else { return false }
        return geteuid() != 0 || chattr("+i", path)
    }

    /// Lets the test's clean-up remove the file again.
    public static func undo(_ path: String) {
        if geteuid() == 0 { _ = chattr("-i", path) }
        _ = chmod(path, 0o644)
    }

    private static func chattr(_ flag: String, _ path: String) -> Bool {
        let process = try? SpawnedProcess("/usr/bin/chattr", [flag, path], standardError: .nullDevice)
        return process?.waitUntilExit().isCleanExit ?? false
    }
}
