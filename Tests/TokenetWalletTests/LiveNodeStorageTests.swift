import Foundation
import Testing
import TokenetNode
import TokenetStorage
import TokenetTestSupport

@testable import TokenetWallet

/// How each node treats its SQLite database as a process: closed on a clean stop, refused at start when the node
/// could not write it, and named once when it is damaged.
@Suite struct LiveNodeStorageTests {
    /// Each node, the database it keeps, and a query that finds what it wrote at start.
    static let nodes: [(node: String, role: String, database: String, written: String)] = [
        ("tsp-node", "tsp", "tsp.sqlite", "SELECT COUNT(*) FROM vault_key_check"),
        ("issuer-node", "issuer", "issuer.sqlite", "SELECT COUNT(*) FROM cards"),
        ("wallet-node", "wallet", "wallet.sqlite", "SELECT COUNT(*) FROM sqlite_master WHERE name = 'cards'"),
    ]

    /// After SIGTERM the node has closed its database, so SQLite folded the write-ahead log into the main file and
    /// removed it: the main file alone holds the data (it was a 4 KB file beside a -wal holding everything).
    @Test(arguments: nodes.map(\.node))
    func aCleanStopLeavesTheDataInTheMainFile(node: String) async throws {
        let entry = try #require(Self.nodes.first { $0.node == node })
        let pki = try await offThePool { try TestPKI.directory() }
        var extra: [String] = []
        if node == "issuer-node" {
            extra = ["--fixtures", Executables.packageRoot.appendingPathComponent("Tools/fixtures/issuer.json").path]
        } else if node == "wallet-node" {
            extra = ["--tsp", try freeLoopbackAddress()]
        }
        let arguments = extra
        let process = try await offThePool { try NodeProcess(node, role: entry.role, pki: pki, extra: arguments) }
        let path = process.directory.file("data/" + entry.database)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "the node runs with a write-ahead log")
        process.stop()
        #expect(process.process.termination?.status == 0, "\(process.stderr)")

        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "\(entry.database)-wal still holds \(wal) bytes after a clean stop")
        // A copy of the main file alone, without whatever -wal or -shm lie beside the original.
        let copy = try ScratchDirectory()
        try FileManager.default.copyItem(atPath: path, toPath: copy.file("copy.sqlite"))
        let database = try Database.open(path: copy.file("copy.sqlite"))
        #expect(try database.queryOne(entry.written)?.int(0) ?? 0 > 0, "\(entry.written)")
    }

    /// The message names the database once (it said "cannot open the wallet database X: cannot open the wallet
    /// database X: corrupt: ..."), and the node exits with status 2 like one it cannot write (it exited with 1).
    @Test func aCorruptDatabaseIsNamedOnce() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let scratch = try ScratchDirectory(data: ["wallet.sqlite": String(repeating: "Z", count: 8192)])
        let result = try await offThePool {
            try runExecutable("wallet-node", try Self.arguments(scratch, pki: pki))
        }
        #expect(result.status == 2, "\(result.stderr)")
        // As the log shows it: a run of digits in the random directory name can read as a card number, masked.
        let opening = maskPAN("the wallet database \(scratch.file("data/wallet.sqlite")) is damaged")
        #expect(result.stderr.components(separatedBy: opening).count == 2, "\(result.stderr)")
        // SQLite's words, without the name of the storage error's code ("corrupt: file is not a database").
        #expect(result.stderr.contains(": file is not a database"), "\(result.stderr)")
        #expect(!result.stderr.contains("corrupt:"), "\(result.stderr)")
    }

    /// A database damaged past its header opens, and its first read fails: the node said "the wallet database could
    /// not be migrated", naming neither the file nor what to do.
    @Test func aDatabaseDamagedPastItsHeaderIsNamedWithWhatToDo() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let scratch = try ScratchDirectory(data: [:])
        let path = scratch.file("data/wallet.sqlite")
        try WalletStore.open(path: path).database.close()
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try file.seekToEnd()
        // Every page after the first, which holds the header and the schema.
        try file.seek(toOffset: 4096)
        try file.write(contentsOf: Data(repeating: 0x5A, count: Int(size) - 4096))
        try file.close()
        let result = try await offThePool {
            try runExecutable("wallet-node", try Self.arguments(scratch, pki: pki))
        }
        #expect(result.status == 2, "\(result.stderr)")
        // The file's name, not its whole path (the log masks digit runs like a card number's).
        #expect(result.stderr.contains("wallet.sqlite is damaged: restore it from a backup"), "\(result.stderr)")
    }

    /// SQLite opened a database the node may not write read-only, and the node then failed every change INTERNAL
    /// with nothing in its log. It now refuses to start, with status 2 and the file named. (As root, file modes do
    /// not stop writes: the file is made immutable instead, where the file system allows it.)
    @Test func aDatabaseTheNodeCannotWriteStopsItAtStart() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let scratch = try ScratchDirectory(data: [:])
        let path = scratch.file("data/wallet.sqlite")
        try WalletStore.open(path: path).database.close()
        guard ReadOnlyFile.make(path) else { return }  // no way to make the file unwritable here
        defer { ReadOnlyFile.undo(path) }
        let result = try await offThePool {
            try runExecutable("wallet-node", try Self.arguments(scratch, pki: pki))
        }
        #expect(result.status == 2, "\(result.stderr)")
        // The file's name, not its whole path: the log masks digit runs like a card number's, and the scratch
        // directory's random name sometimes holds one.
        #expect(result.stderr.contains("wallet.sqlite is not writable"), "\(result.stderr)")
    }

    static func arguments(_ scratch: ScratchDirectory, pki: String) throws -> [String] {
        [
            "--listen", "127.0.0.1:0", "--data-dir", scratch.file("data"), "--tsp", try freeLoopbackAddress(),
            "--cert", "\(pki)/wallet.pem", "--key", "\(pki)/wallet.key", "--ca", "\(pki)/ca.pem",
        ]
    }
}
