import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetStorage

/// Kills a process that is committing transactions with SIGKILL at arbitrary moments and checks the database it
/// leaves: every transaction the process saw committed is there, and every transaction is there whole or not at all.
@Suite struct CrashRecoveryTests {
    static let rowsPerTransaction = 40

    @Test func sigkillNeverLosesACommittedTransactionNorLeavesHalfOfOne() async throws {
        let directory = try TemporaryDirectory()
        let databasePath = directory.path("node.sqlite")
        var confirmed = 0
        for round in 0..<20 {
            // Round 0 kills as soon as the helper has started (often during open or migration); later rounds after
            // a random number of commits, then a random pause of up to 3 ms, so the signal lands at different
            // points of a transaction.
            let target = round == 0 ? 0 : confirmed + Int.random(in: 1...30)
            let helper = try CrashHelperProcess(
                databasePath: databasePath, rowsPerTransaction: Self.rowsPerTransaction, outputDirectory: directory,
                round: round)
            let pause = round == 0 ? 0 : UInt32.random(in: 0...3000)
            let killed = try await offThePool { try helper.killAfterCommit(atLeast: target, pauseMicroseconds: pause) }
            #expect(killed, "round \(round): the helper was not killed by SIGKILL: \(helper.errorOutput)")
            let committed = try helper.committed()
            // Numbers are consecutive: one line per commit, none skipped.
            #expect(committed == committed.indices.map { $0 + (committed.first ?? 0) })
            if let first = committed.first {
                #expect(first > confirmed, "round \(round) restarted at \(first) after \(confirmed) was confirmed")
            }
            confirmed = committed.last ?? confirmed
            try checkDatabase(at: databasePath, confirmed: confirmed, round: round)
        }
    }

    /// Reopens the database as a restarting node would and checks it.
    private func checkDatabase(at path: String, confirmed: Int, round: Int) throws {
        let database = try Database.open(path: path)
        defer { try? database.close() }
        #expect(try database.query("PRAGMA integrity_check").map { try $0.text(0) } == ["ok"], "round \(round)")
        #expect(try database.query("PRAGMA foreign_key_check").isEmpty, "round \(round)")
        let tables = Set(
            try database.query("SELECT name FROM sqlite_schema WHERE type = 'table'").map { try $0.text(0) })
        guard tables.contains("items") else {
            // Killed before the schema was complete: nothing can have been confirmed, and a migration is either
            // recorded together with its tables or not at all.
            #expect(confirmed == 0)
            #expect(tables.contains("batches") == tables.contains("totals"))
            if tables.contains("schema_migrations") {
                let versions = try database.query("SELECT version FROM schema_migrations").map { try $0.int(0) }
                #expect(versions == (tables.contains("batches") ? [1] : []))
            }
            return
        }
        let batches = try database.query("SELECT id, item_count FROM batches ORDER BY id")
        let ids = try batches.map { try $0.int("id") }
        // Every confirmed transaction is present; at most one more committed whose number was not yet printed.
        #expect(ids == ids.indices.map { $0 + 1 }, "round \(round): batch numbers are not 1...n")
        #expect(ids.count >= confirmed && ids.count <= confirmed + 1, "round \(round): \(ids.count) vs \(confirmed)")
        // Each transaction is all-or-nothing: its batch row, all its items, and its share of the total.
        let counts = try database.query("SELECT batch, count(*) AS n FROM items GROUP BY batch ORDER BY batch")
        #expect(try counts.map { try $0.int("batch") } == ids, "round \(round): items of an absent batch")
        #expect(
            try counts.allSatisfy { try $0.int("n") == Self.rowsPerTransaction },
            "round \(round): a transaction is partially present")
        #expect(try batches.allSatisfy { try $0.int("item_count") == Self.rowsPerTransaction })
        let total = try database.queryOne("SELECT items FROM totals WHERE id = 1")?.int(0)
        #expect(total == ids.count * Self.rowsPerTransaction, "round \(round): total does not match the items")
    }
}
