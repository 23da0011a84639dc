import Foundation
import Testing
import TokenetStorage
import TokenetTestSupport

@testable import TokenetWallet

/// How a node treats its SQLite database as a process: refused at start when the node could not write it, and
/// named once when it is damaged.
@Suite struct LiveNodeStorageTests {
    /// The message names the database once (it said "cannot open the wallet database X: cannot open the wallet
    /// database X: corrupt: ...").
    @Test func aCorruptDatabaseIsNamedOnce() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let scratch = try ScratchDirectory(data: ["wallet.sqlite": String(repeating: "Z", count: 8192)])
        let result = try await offThePool {
            try runExecutable("wallet-node", try Self.arguments(scratch, pki: pki))
        }
        #expect(result.status == 1, "\(result.stderr)")
        let opening = "cannot open the wallet database \(scratch.file("data/wallet.sqlite"))"
        #expect(result.stderr.components(separatedBy: opening).count == 2, "\(result.stderr)")
        #expect(result.stderr.contains("corrupt"), "\(result.stderr)")
    }

    /// SQLite opened a database the node may not write read-only, and the node then failed every change INTERNAL
    /// with nothing in its log. It now refuses to start, with status 2 and the file named. (As root, file modes do
    /// not stop writes: the file is made immutable instead, where the file system allows it.)
    @Test func aDatabaseTheNodeCannotWriteStopsItAtStart() async throws {
        let pki = try await offThePool { try TestPKI.directory() }
        let scratch = try ScratchDirectory(data: [:])
        let path = scratch.file("data/wallet.sqlite")
        try WalletStore.open(path: path).database.close()
        #expect(chmod(path, 0o444) == 0)
        let root = geteuid() == 0
        if root {
            guard chattr("+i", path) else { return }  // no way to make the file unwritable here
        }
        defer {
            if root { _ = chattr("-i", path) }
        }
        let result = try await offThePool {
            try runExecutable("wallet-node", try Self.arguments(scratch, pki: pki))
        }
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("database \(path) is not writable"), "\(result.stderr)")
    }

    static func arguments(_ scratch: ScratchDirectory, pki: String) throws -> [String] {
        [
            "--listen", "127.0.0.1:0", "--data-dir", scratch.file("data"), "--tsp", try freeLoopbackAddress(),
            "--cert", "\(pki)/wallet.pem", "--key", "\(pki)/wallet.key", "--ca", "\(pki)/ca.pem",
        ]
    }

    func chattr(_ flag: String, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
