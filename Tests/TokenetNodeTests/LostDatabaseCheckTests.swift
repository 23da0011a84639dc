import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// A database truncated to 0 bytes, or deleted, in a data directory an earlier start used made the node start as a
/// new, empty one without a word.
@Suite struct LostDatabaseCheckTests {
    @Test func anEmptyDatabaseBesideAnEarlierStartsFileIsWarnedOf() throws {
        let directory = try TemporaryDirectory()
        let dir = directory.url.path
        func warning() -> String? { LostDatabaseCheck.warning(directory: dir, database: "tsp.sqlite", marker: "m.key") }
        // A first start: nothing there yet, or only the database it is making.
        #expect(warning() == nil)
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite", contents: Data())
        #expect(warning() == nil)
        // An earlier start's file: the empty database is a lost one.
        _ = FileManager.default.createFile(atPath: dir + "/m.key", contents: Data("k".utf8))
        let text = try #require(warning())
        #expect(text.hasPrefix("\(dir)/tsp.sqlite is empty (0 bytes), though m.key (from "), "\(text)")
        #expect(text.contains("Stop it and restore tsp.sqlite from a backup (with its keys)"), "\(text)")
        // What SQLite has not yet copied into the file is in its write-ahead log: not lost.
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite-wal", contents: Data(repeating: 1, count: 32))
        #expect(warning() == nil)
        try FileManager.default.removeItem(atPath: dir + "/tsp.sqlite-wal")
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite", contents: Data(repeating: 0, count: 4096))
        #expect(warning() == nil)
        // A database deleted since (or moved away) is lost just the same.
        try FileManager.default.removeItem(atPath: dir + "/tsp.sqlite")
        let missing = try #require(warning())
        #expect(missing.hasPrefix("\(dir)/tsp.sqlite is missing, though m.key (from "), "\(missing)")
        // Deleted while its node ran, it leaves its write-ahead log: still lost, and the log is moved aside before
        // SQLite makes a new database beside it.
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite-wal", contents: Data(repeating: 1, count: 32))
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite-shm", contents: Data(repeating: 1, count: 32))
        #expect(warning()?.hasPrefix("\(dir)/tsp.sqlite is missing") == true)
        let moved = LostDatabaseCheck.setAsideLeftovers(directory: dir, database: "tsp.sqlite")
        #expect(moved.count == 2 && moved.allSatisfy { $0.contains(".orphaned-") }, "\(moved)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/tsp.sqlite-wal"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/tsp.sqlite-shm"))
        // Beside a database that is there, nothing is moved.
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite", contents: Data(repeating: 0, count: 4096))
        _ = FileManager.default.createFile(atPath: dir + "/tsp.sqlite-wal", contents: Data(repeating: 1, count: 32))
        #expect(LostDatabaseCheck.setAsideLeftovers(directory: dir, database: "tsp.sqlite").isEmpty)
    }

    /// The node says it at start, and starts.
    @Test(.timeLimit(.minutes(3))) func aNodeStartedOnATruncatedDatabaseSaysSo() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let arguments = ["--plaintext", "--listen", "127.0.0.1:0", "--data-dir", data, "--ready-file"]
        for round in 0..<2 {
            let ready = directory.path("ready-\(round)")
            let node = try LaunchedProcess("tsp-node", arguments + [ready])
            _ = try await PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
                FileManager.default.fileExists(atPath: ready) ? true : nil
            }
            node.process.send(SIGTERM)
            let log = try await node.waitForExit(limit: 30).stderr
            if round == 0 {
                #expect(!log.contains("is empty (0 bytes)"), "\(log)")
                try Data().write(to: URL(fileURLWithPath: data + "/tsp.sqlite"))
            } else {
                #expect(log.contains("\(data)/tsp.sqlite is empty (0 bytes), though keys/data-vault.key"), "\(log)")
            }
        }
    }
}
