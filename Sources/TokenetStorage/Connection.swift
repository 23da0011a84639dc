import CSQLite

/// One SQLite connection: owns the `sqlite3` handle and its prepared-statement cache, and closes both in `deinit`.
///
/// Not thread-safe by itself: it is opened with `SQLITE_OPEN_NOMUTEX` because `Database` already serialises every
/// use behind its mutex, so SQLite's own per-call locking would be redundant.
final class Connection {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    private let cacheCapacity: Int

    /// Opens (creating if needed) the database at `path`; `":memory:"` opens a private in-memory database.
    init(path: String, cacheCapacity: Int, readOnly: Bool = false, uri: Bool = false) throws {
        self.cacheCapacity = max(cacheCapacity, 0)
        var connection: OpaquePointer?
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let flags = access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | (uri ? SQLITE_OPEN_URI : 0)
        let result = sqlite3_open_v2(path, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            // sqlite3_open_v2 returns a handle even on failure (for the message); it must still be closed.
            let error = StorageError.sqlite(
                result == SQLITE_OK ? SQLITE_NOMEM : result, connection: connection, sql: nil,
                context: "cannot open database at \(path)")
            sqlite3_close_v2(connection)
            throw error
        }
        handle = connection
    }

    deinit {
        // Statements are finalized first so that closing does not leave a zombie connection behind.
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Whether the main database file was deleted, or renamed away, since it was opened (SQLite compares the file it
    /// holds open with what its path names now). A change then goes into a file nothing will open again: in WAL mode
    /// SQLite commits it all the same, and the node acknowledged writes that its next start would not find.
    var fileHasMoved: Bool {
        var moved: Int32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK else { return false }
        return moved != 0
    }

    /// False while a `Transaction` body runs: the transaction begins and ends with the body, so statements that
    /// would begin or end it (`BEGIN`, `COMMIT`, `ROLLBACK`) are refused before they run.
    var allowsTransactionControl = true

    /// Runs one statement and returns its rows; `cached: false` for statements that run once (configuration).
    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue] = [], cached: Bool = true) throws -> [Row] {
        let statement = cached ? try statement(for: sql) : try Statement(connection: handle, sql: sql)
        if statement.controlsTransaction && !allowsTransactionControl {
            throw Self.transactionControlRefused(sql)
        }
        return try statement.run(parameters)
    }

    /// Runs `sql` when SQLite says it cannot change the database file, and returns nil without running it otherwise
    /// (for the read connection, which leaves changes to the other one).
    func runIfReadOnly(_ sql: String, _ parameters: [SQLValue]) throws -> [Row]? {
        let statement = try statement(for: sql)
        guard sqlite3_stmt_readonly(statement.handle) != 0, !statement.controlsTransaction else { return nil }
        return try statement.run(parameters)
    }

    private static func transactionControlRefused(_ sql: String) -> StorageError {
        StorageError(
            .misuse,
            "transaction control inside a transaction body; the transaction ends when the body returns "
                + "or throws (use tx.savepoint for partial rollback)", sql: sql)
    }

    /// Runs every statement in `sql`, in order, without parameters; used for migrations and schema scripts.
    /// Statements are not cached: scripts run once.
    func executeScript(_ sql: String) throws {
        try sql.withCString { text in
            var next: UnsafePointer<CChar>? = text
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let result = sqlite3_prepare_v2(handle, current, -1, &statement, &tail)
                guard result == SQLITE_OK else {
                    let failing = String(cString: current)
                    throw StorageError.sqlite(result, connection: handle, sql: failing, context: "cannot prepare")
                }
                next = tail
                // A NULL statement means only whitespace or comments remained.
                guard let statement else { continue }
                defer { sqlite3_finalize(statement) }
                if !allowsTransactionControl, let text = sqlite3_sql(statement).map({ String(cString: $0) }),
                    Statement.controlsTransaction(text)
                {
                    throw Self.transactionControlRefused(text)
                }
                var step = sqlite3_step(statement)
                while step == SQLITE_ROW { step = sqlite3_step(statement) }
                guard step == SQLITE_DONE else {
                    let failing = sqlite3_sql(statement).map { String(cString: $0) }
                    throw StorageError.sqlite(step, connection: handle, sql: failing)
                }
            }
        }
    }

    /// True when no transaction is open (SQLite's autocommit mode).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// The rowid of the most recent successful INSERT on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed by all INSERT, UPDATE and DELETE statements since the connection opened.
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    /// Rolls back the open transaction, if any. SQLite rolls back on its own after some errors (I/O, full disk),
    /// so a missing transaction is not an error; a failing ROLLBACK leaves nothing better to do than report.
    func rollbackIfNeeded() {
        guard !isAutocommit else { return }
        _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
    }

    /// The cached statement for `sql`, prepared on first use. When the cache is full an arbitrary entry is
    /// dropped: nodes use a small fixed set of statements, so a simple bound is enough to stop unbounded growth
    /// from generated SQL.
    private func statement(for sql: String) throws -> Statement {
        if let cached = cache[sql] { return cached }
        let statement = try Statement(connection: handle, sql: sql)
        guard cacheCapacity > 0 else { return statement }
        if cache.count >= cacheCapacity, let victim = cache.keys.first {
            cache.removeValue(forKey: victim)
        }
        cache[sql] = statement
        return statement
    }

    var cachedStatementCount: Int { cache.count }
}
