import Testing

@testable import TokenetStorage

@Suite struct TransactionTests {
    struct Abort: Error {}

    private func makeDatabase() throws -> Database {
        let database = try Database.openInMemory()
        try database.executeScript(
            """
            CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0));
            INSERT INTO accounts VALUES (1, 100), (2, 0);
            """)
        return database
    }

    private func balances(_ database: Database) throws -> [Int] {
        try database.query("SELECT balance FROM accounts ORDER BY id").map { try $0.int(0) }
    }

    @Test func aTransactionCommitsAllItsStatementsAndReturnsTheBodyResult() throws {
        let database = try makeDatabase()
        let moved = try database.transaction { tx in
            try tx.execute("UPDATE accounts SET balance = balance - 30 WHERE id = 1")
            try tx.execute("UPDATE accounts SET balance = balance + 30 WHERE id = 2")
            return try tx.queryOne("SELECT balance FROM accounts WHERE id = 2")?.int(0)
        }
        #expect(moved == 30)
        #expect(try balances(database) == [70, 30])
    }

    @Test func aThrowingBodyRollsBackEverythingAndRethrowsItsError() throws {
        let database = try makeDatabase()
        #expect(throws: Abort.self) {
            try database.transaction { tx in
                try tx.execute("UPDATE accounts SET balance = 0 WHERE id = 1")
                try tx.execute("INSERT INTO accounts VALUES (3, 5)")
                throw Abort()
            }
        }
        #expect(try balances(database) == [100, 0])
        // The connection is usable and not left inside a transaction.
        try database.transaction { tx in try tx.execute("UPDATE accounts SET balance = 1 WHERE id = 2") }
        #expect(try balances(database) == [100, 1])
    }

    @Test func aFailingStatementRollsBackTheStatementsBeforeIt() throws {
        let database = try makeDatabase()
        let error = #expect(throws: StorageError.self) {
            try database.transaction { tx in
                try tx.execute("UPDATE accounts SET balance = balance + 500 WHERE id = 2")
                try tx.execute("UPDATE accounts SET balance = balance - 500 WHERE id = 1")  // CHECK fails
            }
        }
        #expect(error?.constraint == .check)
        #expect(try balances(database) == [100, 0])
    }

    @Test func nestedTransactionsAndDirectCallsInsideABodyAreRefused() throws {
        let database = try makeDatabase()
        var nested: StorageError?
        var direct: StorageError?
        try database.transaction { tx in
            try tx.execute("UPDATE accounts SET balance = 1 WHERE id = 1")
            nested = #expect(throws: StorageError.self) { try database.transaction { _ in } }
            direct = #expect(throws: StorageError.self) { try database.query("SELECT 1") }
        }
        #expect(nested?.code == .misuse)
        #expect(nested?.message.contains("savepoint") == true)
        #expect(direct?.code == .misuse)
        #expect(try balances(database) == [1, 0])
    }

    @Test func aSavepointUndoesOnlyItsOwnChangesWhenItThrows() throws {
        let database = try makeDatabase()
        try database.transaction { tx in
            try tx.execute("UPDATE accounts SET balance = 50 WHERE id = 1")
            #expect(throws: Abort.self) {
                try tx.savepoint { inner in
                    try inner.execute("UPDATE accounts SET balance = 0 WHERE id = 1")
                    try inner.savepoint { innermost in
                        try innermost.execute("UPDATE accounts SET balance = 9 WHERE id = 2")
                    }
                    throw Abort()
                }
            }
            try tx.savepoint { inner in try inner.execute("UPDATE accounts SET balance = 7 WHERE id = 2") }
        }
        #expect(try balances(database) == [50, 7])
    }

    @Test func aSavepointInsideARolledBackTransactionIsRolledBackToo() throws {
        let database = try makeDatabase()
        #expect(throws: Abort.self) {
            try database.transaction { tx in
                try tx.savepoint { inner in try inner.execute("UPDATE accounts SET balance = 7 WHERE id = 2") }
                throw Abort()
            }
        }
        #expect(try balances(database) == [100, 0])
    }

    @Test func theHandleIsInvalidAfterTheBody() throws {
        let database = try makeDatabase()
        let kept = try database.transaction { tx in tx }
        let error = #expect(throws: StorageError.self) { try kept.execute("DELETE FROM accounts") }
        #expect(error?.code == .misuse)
        #expect(throws: StorageError.self) { _ = try kept.lastInsertRowID }
        #expect(try balances(database) == [100, 0])
    }

    @Test(arguments: [
        "COMMIT", "ROLLBACK", "end transaction", "  -- note\n /* block */ Commit;", "BEGIN", "rollback transaction;",
        ";COMMIT", " ; ROLLBACK",
    ])
    func endingOrBeginningATransactionInsideTheBodyIsRefusedBeforeItRuns(statement: String) throws {
        let database = try makeDatabase()
        var refused: StorageError?
        var scriptRefused: StorageError?
        #expect(throws: StorageError.self) {
            try database.transaction { tx in
                try tx.execute("UPDATE accounts SET balance = 3 WHERE id = 1")
                refused = caughtStorageError { try tx.execute(statement) }
                let script = "UPDATE accounts SET balance = 4 WHERE id = 2; \(statement); DELETE FROM accounts;"
                scriptRefused = caughtStorageError { try tx.executeScript(script) }
                throw try #require(refused)
            }
        }
        #expect(refused?.code == .misuse)
        #expect(refused?.sql == statement)
        #expect(scriptRefused?.code == .misuse)
        #expect(try balances(database) == [100, 0])
    }

    @Test func rollbackToASavepointIsAllowedInsideTheBody() throws {
        let database = try makeDatabase()
        try database.transaction { tx in
            try tx.execute("UPDATE accounts SET balance = 3 WHERE id = 1")
            try tx.executeScript("SAVEPOINT manual; UPDATE accounts SET balance = 9 WHERE id = 2;")
            try tx.execute("ROLLBACK TRANSACTION TO manual")
            try tx.execute("RELEASE manual")
        }
        #expect(try balances(database) == [3, 0])
    }

    @Test func transactionControlKeywordsAreRecognisedPastCommentsAndCase() {
        let controlling = [
            "BEGIN", "begin immediate", " \n\tCOMMIT", "/* x */end", "-- c\nRollback", "ROLLBACK;", ";COMMIT",
            " ; ;commit", "-- c\n;END",
        ]
        let ordinary = [
            "ROLLBACK TO s", "rollback transaction to s", "SELECT 1", "SAVEPOINT s", "RELEASE s",
            "/* BEGIN */ SELECT 1",
            "-- COMMIT\nSELECT 1", "", "BEGINNING", "UPDATE t SET x = 1",
        ]
        for sql in controlling { #expect(Statement.controlsTransaction(sql), "\(sql)") }
        for sql in ordinary { #expect(!Statement.controlsTransaction(sql), "\(sql)") }
    }

    @Test func afterSQLiteRollsBackOnItsOwnNoStatementRunsOutsideTheTransaction() throws {
        let directory = try TemporaryDirectory()
        let database = try Database.open(path: directory.path("node.sqlite"))
        try database.executeScript("CREATE TABLE t (x); PRAGMA max_page_count = 10;")
        var full: StorageError?
        var afterwards: StorageError?
        let error = #expect(throws: StorageError.self) {
            try database.transaction { tx in
                try tx.execute("INSERT INTO t VALUES (1)")
                // A full database makes SQLite roll back the whole transaction, not just the statement.
                full = caughtStorageError { try tx.execute("INSERT INTO t VALUES (randomblob(100000))") }
                afterwards = caughtStorageError { try tx.execute("INSERT INTO t VALUES (2)") }
            }
        }
        #expect(full?.code == .full)
        #expect(afterwards?.code == .interrupted)
        #expect(error?.code == .interrupted)
        #expect(try database.query("SELECT x FROM t").isEmpty)
    }

    @Test func isClosedCanBeAskedInsideTheBody() throws {
        let database = try makeDatabase()
        let closed = try database.transaction { _ in database.isClosed }
        #expect(!closed)
    }

    @Test func aTransactionLeftOpenByExecuteIsRolledBackAndRefused() throws {
        let database = try makeDatabase()
        let error = #expect(throws: StorageError.self) { try database.execute("BEGIN") }
        #expect(error?.code == .misuse)
        try database.execute("UPDATE accounts SET balance = 4 WHERE id = 2")
        // Had BEGIN stayed open, this update would be lost when the database closes.
        #expect(try database.withConnection { $0.isAutocommit })
        #expect(try balances(database) == [100, 4])
    }

    @Test func insertedRowIDAndChangesAreReadableInsideTheTransaction() throws {
        let database = try makeDatabase()
        let (rowID, changes) = try database.transaction { tx in
            try tx.execute("INSERT INTO accounts (balance) VALUES (1), (2)")
            return (try tx.lastInsertRowID, try tx.changes)
        }
        #expect(rowID == 4)
        #expect(changes == 2)
    }

    @Test func aWriterInAnotherConnectionMakesBeginImmediateReportBusyAfterTheTimeout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let first = try Database.open(path: path, options: .init(busyTimeout: .milliseconds(50)))
        let second = try Database.open(path: path, options: .init(busyTimeout: .milliseconds(50)))
        try first.execute("CREATE TABLE t (x)")
        var error: StorageError?
        try first.transaction { tx in
            try tx.execute("INSERT INTO t VALUES (1)")
            error = #expect(throws: StorageError.self) {
                try second.transaction { other in try other.execute("INSERT INTO t VALUES (2)") }
            }
        }
        #expect(error?.code == .busy)
        #expect(try second.query("SELECT x FROM t").map { try $0.int(0) } == [1])
    }
}
