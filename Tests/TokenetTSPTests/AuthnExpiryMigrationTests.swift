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
        #expect(
            try indexNames(of: "transactions", in: database)
                == ["transactions_authn_pending", "transactions_made", "transactions_token"])
    }
}

/// TSP migration 26 keys Digitize requests by wallet node and request id: each row keeps its answer, under the node
/// of the token it made (or of its receipt; '' when neither names one), and the same id may then serve two nodes.
@Suite struct DigitizeRequestsPerNodeMigrationTests {
    @Test func eachRequestKeepsItsAnswerUnderItsWalletNode() throws {
        let database = try Database.openInMemory()
        defer { try? database.close() }
        // The rows below name receipts and tokens this test does not make.
        _ = try database.execute("PRAGMA foreign_keys=OFF")
        _ = try Migrator(TSPStore.migrations.filter { $0.version < 26 }).migrate(database)
        for (receipt, node) in [("receipt-a", "wallet-a"), ("receipt-b", nil), ("receipt-c", nil)]
            as [(String, String?)]
        {
            _ = try database.execute(
                """
                INSERT INTO eligibility_receipts (receipt, wallet_account_id, device_id, issuer_id, scheme, pan_last4,
                    card_data, input_method, created_at_ms, expires_at_ms, wallet_node_id)
                VALUES (?, 'account-1', 'device-1', 'bank-a', 'VISA', '1111', x'00', 1, 1, 2, ?)
                """, [receipt, node])
        }
        for (card, node) in [("card-b", "wallet-b")] as [(String, String?)] {
            _ = try database.execute(
                """
                INSERT INTO tokens (digital_card_id, scheme, token_pan, token_last4, token_expiry, funding_pan,
                    pan_last4, issuer_id, wallet_account_id, device_id, state, created_at_ms, updated_at_ms,
                    wallet_node_id)
                VALUES (?, 'VISA', x'00', '0001', '12/30', x'00', '1111', 'bank-a', 'account-1', 'device-1', 'ACTIVE',
                    1, 1, ?)
                """, [card, node])
        }
        for (request, receipt, card, status) in [
            ("req-1", "receipt-a", "card-a", "done"), ("req-2", "receipt-b", "card-b", "pending"),
            ("req-3", "receipt-c", "card-c", "done"),
        ] {
            _ = try database.execute(
                """
                INSERT INTO digitize_requests (request_id, receipt, digital_card_id, status, response, created_at_ms)
                VALUES (?, ?, ?, ?, ?, 5)
                """, [request, receipt, card, status, status == "done" ? [UInt8]([1, 2]) : nil])
        }

        let applied = try Migrator(TSPStore.migrations).migrate(database)
        #expect(applied.map(\.version) == [26, 27, 28])
        let copied = try database.query(
            "SELECT wallet_node_id, request_id, receipt, digital_card_id, status, response FROM digitize_requests "
                + "ORDER BY request_id")
        #expect(try copied.map { try $0.text(0) } == ["wallet-a", "wallet-b", ""])
        #expect(try copied.map { try $0.text(2) } == ["receipt-a", "receipt-b", "receipt-c"])
        #expect(try copied.map { try $0.text(4) } == ["done", "pending", "done"])
        #expect(try copied.map { try $0.get(5, as: [UInt8]?.self) } == [[1, 2], nil, [1, 2]])
        // Another node may now use a request id the first one used.
        _ = try database.execute(
            """
            INSERT INTO digitize_requests (wallet_node_id, request_id, receipt, digital_card_id, status, created_at_ms)
            VALUES ('wallet-z', 'req-1', 'receipt-a', 'card-z', 'pending', 6)
            """)
        #expect(
            try indexNames(of: "digitize_requests", in: database)
                == ["digitize_requests_pending", "digitize_requests_receipt", "digitize_requests_token"])
    }
}

/// The names of `table`'s own indexes (not SQLite's automatic ones), sorted.
func indexNames(of table: String, in database: Database) throws -> [String] {
    try database.query(
        """
        SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND substr(name, 1, 7) != 'sqlite_'
        ORDER BY name
        """, [table]
    ).map { try $0.text(0) }
}

/// TSP migration 27 keeps each party's suspension of a token (`token_suspensions`), filled from the history: each
/// party's latest move to SUSPENDED since the token was last in another state, so that a suspension taken over under
/// the rules before stands beside the one that took it over, and the upgrade lifts nobody's.
@Suite struct TokenSuspensionsMigrationTests {
    @Test func eachPartysSuspensionStandingIsKept() throws {
        let database = try Database.openInMemory()
        defer { try? database.close() }
        // The tokens below name an issuer this test does not make.
        _ = try database.execute("PRAGMA foreign_keys=OFF")
        _ = try Migrator(TSPStore.migrations.filter { $0.version < 27 }).migrate(database)
        let tokens: [(String, String)] = [
            ("DN-TAKEN", "SUSPENDED"), ("DN-RESUMED", "SUSPENDED"), ("DN-DELETED", "DEACTIVATED"),
            ("DN-ACTIVE", "ACTIVE"), ("DN-RENEWED", "SUSPENDED"),
        ]
        for (card, state) in tokens {
            _ = try database.execute(
                """
                INSERT INTO tokens (digital_card_id, scheme, token_pan, token_last4, token_expiry, funding_pan,
                    pan_last4, issuer_id, wallet_account_id, device_id, state, created_at_ms, updated_at_ms)
                VALUES (?, 'VISA', x'00', '0001', '12/30', x'00', '1111', 'bank-a', 'account-1', 'device-1', ?, 1, 1)
                """, [card, state])
        }
        // (token, from, to, actor, reason), in order.
        let events: [(String, String?, String, String, String)] = [
            // The wallet's suspension, which the issuer took over under the old rules.
            ("DN-TAKEN", "ACTIVE", "SUSPENDED", "wallet:wallet-1", "DEVICE_LOST"),
            ("DN-TAKEN", "SUSPENDED", "SUSPENDED", "issuer:bank-a", "LOST_CARD"),
            // Suspended by the wallet, resumed, then suspended by the TSP alone.
            ("DN-RESUMED", "ACTIVE", "SUSPENDED", "wallet:wallet-1", "USER_REQUEST"),
            ("DN-RESUMED", "SUSPENDED", "ACTIVE", "wallet:wallet-1", "USER_REQUEST"),
            ("DN-RESUMED", "ACTIVE", "SUSPENDED", "tsp", "FRAUD_SUSPECTED"),
            // Suspended by the issuer, then deleted by the wallet: the hold stays.
            ("DN-DELETED", "ACTIVE", "SUSPENDED", "issuer:bank-a", "FRAUD_SUSPECTED"),
            ("DN-DELETED", "SUSPENDED", "DEACTIVATED", "wallet:wallet-1", "USER_REQUEST"),
            ("DN-ACTIVE", "ACTIVE", "SUSPENDED", "issuer:bank-a", "LOST_CARD"),
            ("DN-ACTIVE", "SUSPENDED", "ACTIVE", "issuer:bank-a", "FOUND"),
            // A renewal's event suspends nothing.
            ("DN-RENEWED", "ACTIVE", "SUSPENDED", "tsp", "FRAUD_SUSPECTED"),
            ("DN-RENEWED", "SUSPENDED", "SUSPENDED", "issuer:bank-a", "card renewed; funding card now ends in 1129"),
        ]
        for (card, from, to, actor, reason) in events {
            _ = try database.execute(
                """
                INSERT INTO token_events (digital_card_id, at_ms, from_state, to_state, actor, reason, trace_id)
                VALUES (?, 5, ?, ?, ?, ?, 't')
                """, [card, from, to, actor, reason])
        }
        #expect(try Migrator(TSPStore.migrations).migrate(database).map(\.version) == [27, 28])
        let rows = try database.query(
            "SELECT digital_card_id, party, reason FROM token_suspensions ORDER BY digital_card_id, party"
        ).map { [try $0.text(0), try $0.text(1), try $0.text(2)] }
        #expect(
            rows == [
                ["DN-DELETED", "issuer", "FRAUD_SUSPECTED"], ["DN-RENEWED", "tsp", "FRAUD_SUSPECTED"],
                ["DN-RESUMED", "tsp", "FRAUD_SUSPECTED"], ["DN-TAKEN", "issuer", "LOST_CARD"],
                ["DN-TAKEN", "wallet", "DEVICE_LOST"],
            ], "\(rows)")
    }
}
