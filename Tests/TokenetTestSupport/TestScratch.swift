import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The root of this test process's scratch directories; a global so the `atexit` handler, which captures nothing, can
/// remove it.
private let scratchRoot = FileManager.default.temporaryDirectory
    .appendingPathComponent("\(TestScratch.rootPrefix)\(getpid())")

/// Scratch directories for tests that hand a path to code that outlives any one Swift value: stores, nodes, child
/// processes. They all live under one root per test process, removed when the process exits, so a suite that creates
/// hundreds of data directories leaves nothing behind in the system temporary directory, even where a test fails
/// before its own cleanup would run.
///
/// A root left by a test process that was killed is removed by the next test process. Set
/// `TOKENET_KEEP_TEST_DIRECTORIES=1` to keep this process's root for a look afterwards; its path is printed.
public enum TestScratch {
    static let rootPrefix = "tokenet-tests-"

    /// This process's root, made on first use.
    private static let root: URL = {
        removeRootsOfEndedProcesses()
        try? FileManager.default.createDirectory(at: scratchRoot, withIntermediateDirectories: true)
        if ProcessInfo.processInfo.environment["TOKENET_KEEP_TEST_DIRECTORIES"] == "1" {
            print("test directories kept in \(scratchRoot.path)")
        } else {
            atexit { try? FileManager.default.removeItem(at: scratchRoot) }
        }
        return scratchRoot
    }()

    /// A new, empty directory named `prefix-` and a `uniqueName()`.
    public static func directory(_ prefix: String) throws -> URL {
        let url = root.appendingPathComponent("\(prefix)-\(uniqueName())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A name no other call returns: a UUID's hex written with letters only (`0`–`9` as `g`–`p`).
    ///
    /// Paths end up in what nodes and tools print, which masks card numbers: a UUID whose digit groups happen to
    /// make a Luhn-valid number (about one in ten thousand) is masked like one, and a test looking for its own path
    /// in that output failed now and then. A name without digits is never masked.
    public static func uniqueName() -> String {
        String(
            String.UnicodeScalarView(
                UUID().uuidString.unicodeScalars.map { scalar in
                    guard ("0"..."9").contains(scalar) else { return scalar }
                    return Unicode.Scalar(scalar.value - 0x30 + 0x67)!
                }))
    }

    /// The path of a new, empty directory named `prefix-` and a `uniqueName()`.
    public static func path(_ prefix: String) throws -> String { try directory(prefix).path }

    /// Removes the roots whose process no longer exists. A process id that was reused keeps its root until that
    /// process ends too; that costs disk space, never a live process's files.
    private static func removeRootsOfEndedProcesses() {
        let temporary = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return }
        for name in names where name.hasPrefix(rootPrefix) {
            guard let pid = Int32(name.dropFirst(rootPrefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }
}
