import Testing
import TokenetStorage

@testable import TokenetTSP

/// TSP migration 16 copies the transactions table so that a payment's AUTHN can be stored EXPIRED: every row stays,
/// with its row id (ListTransactions page keys hold row ids), and so do the table's indexes.
@Suite struct AuthnExpiryMigrationTests {
    @Test func everyTransactionKeepsItsRowIDAndTheIndexesAreMadeAgain() throws {
        let database = try Database.openInMemory()
        defer { try? database.close() }
        // The rows below name tokens this test does not make.
        _ = try database.execute("PRAGMA foreign_keys=OFF")
        _ = try Migrator(TSPStore.migrations.filter { $0.version < 16 }).migrate(database)
        let rows: [(rowID: Int64, id: String, status: String?, expires: Int64?)] = [
            (7, "txn-plain", nil, nil), (9, "txn-pending", "PENDING", 1_000), (12, "txn-answered", "PROCEEDED", 2_000),
        ]
        for row in rows {
            _ = try database.execute(
                """
                INSERT INTO transactions (rowid, id, digital_card_id, amount_minor, currency, merchant, approved, at_ms,
                    authn_request_id, authn_status, authn_expires_at_ms)
                VALUES (?, ?, 'card-1', 100, 'USD', 'Shop', 1, ?, ?, ?, ?)
                """,
                [
                    row.rowID, row.id, row.rowID * 10, row.status.map { _ in "authn-" + row.id },
                    row.status, row.expires,
                ])
        }
        #expect(
            throws: (any Error).self,
            "before the migration the table refuses EXPIRED"
        ) {
            _ = try database.execute("UPDATE transactions SET authn_status = 'EXPIRED' WHERE id = 'txn-pending'")
        }

        let applied = try Migrator(TSPStore.migrations).migrate(database)
        #expect(applied.map(\.version).contains(16))
        let copied = try database.query(
            "SELECT rowid, id, authn_status, authn_expires_at_ms, at_ms FROM transactions ORDER BY rowid")
        #expect(try copied.map { try $0.int64(0) } == [7, 9, 12])
        #expect(try copied.map { try $0.text(1) } == ["txn-plain", "txn-pending", "txn-answered"])
        #expect(try copied.map { try $0.get(2, as: String?.self) } == [nil, "PENDING", "PROCEEDED"])
        #expect(try copied.map { try $0.get(3, as: Int64?.self) } == [nil, 1_000, 2_000])
        #expect(try copied.map { try $0.int64(4) } == [70, 90, 120])
        _ = try database.execute("UPDATE transactions SET authn_status = 'EXPIRED' WHERE id = 'txn-pending'")
        let indexes = try database.query(
            """
            SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'
                AND substr(name, 1, 7) != 'sqlite_' ORDER BY name
            """)
        #expect(
            try indexes.map { try $0.text(0) }
                == ["transactions_authn_pending", "transactions_made", "transactions_token"])
    }
}
