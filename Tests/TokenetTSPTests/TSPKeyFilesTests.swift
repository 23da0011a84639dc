import Foundation
import Testing
import TokenetNode
import TokenetStorage

@testable import TokenetTSP

@Suite struct TSPKeyFilesTests {
    /// A key file gone from a TSP whose database holds data is said as the node starts: it was made anew without a
    /// word, and the access tokens issued before stopped verifying with nothing in the log to say why.
    @Test func aKeyMissingBesideADatabaseWithDataIsSaid() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-tests-keys-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A first start: no database yet, so nothing is missing.
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).isEmpty)
        _ = try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        _ = try TSPKeyFiles.loadAccessTokenKey(dataDirectory: directory)
        try Data("SQLite format 3\0".utf8).write(to: URL(fileURLWithPath: directory + "/tsp.sqlite"))
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).isEmpty)

        try FileManager.default.removeItem(atPath: directory + "/keys/access-token.key")
        #expect(
            TSPKeyFiles.missingKeyWarnings(dataDirectory: directory) == [
                "\(directory)/keys/access-token.key is missing, though \(directory)/tsp.sqlite shows this data "
                    + "directory was used before: a new key is made in its place, and access tokens issued before no "
                    + "longer verify: cardholders sign in again; stop the node and restore the key from a backup if "
                    + "there is one"
            ])
        try FileManager.default.removeItem(atPath: directory + "/keys/card-key-current.pem")
        #expect(TSPKeyFiles.missingKeyWarnings(dataDirectory: directory).count == 2)
    }

    /// Another party's database in the TSP's place is refused before any key is made beside it: the TSP made a new
    /// vault key, card key and access-token key, and warned that keys were missing, before it refused the file.
    @Test func anotherNodesDatabaseIsRefusedBeforeAnyKeyIsMade() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-tests-keys-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wallet = try Database.open(path: directory + "/tsp.sqlite")
        try Migrator([Migration(version: 1, name: "cards", sql: "CREATE TABLE cards (id INTEGER);")]).migrate(wallet)
        try wallet.close()
        let logger = Logger(node: "tsp-node", sink: MemoryLogSink())
        #expect(throws: NodeError.self) {
            _ = try TSPNode.services(dataDirectory: directory, issuers: IssuerDirectory(fallback: nil), logger: logger)
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/keys"))
        #expect(throws: StorageError.self) { try TSPStore.checkOwnership(path: directory + "/tsp.sqlite") }
        // A first start (no file yet) passes.
        try TSPStore.checkOwnership(path: directory + "/none.sqlite")
    }

    /// A start refused for a lost vault key makes no other key: it made a new card key and access-token key first,
    /// and the start after the vault key was restored took them without a word.
    @Test func aStartRefusedForItsVaultKeyMakesNoOtherKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenet-tests-keys-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(node: "tsp-node", sink: MemoryLogSink())
        _ = try TSPNode.services(dataDirectory: directory, issuers: IssuerDirectory(fallback: nil), logger: logger)
        try FileManager.default.removeItem(atPath: directory + "/keys")
        let sink = MemoryLogSink()
        #expect(throws: NodeError.self) {
            _ = try TSPNode.services(
                dataDirectory: directory, issuers: IssuerDirectory(fallback: nil),
                logger: Logger(node: "tsp-node", sink: sink))
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/keys/card-key-current.pem"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/keys/access-token.key"))
        // Nor does it say it made them.
        #expect(!sink.lines.contains { $0.contains("is missing, though") }, "\(sink.lines)")
    }
}
