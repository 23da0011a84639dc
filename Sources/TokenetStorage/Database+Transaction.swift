extension Database {
    /// Runs `body` in one transaction: `BEGIN IMMEDIATE`, then `COMMIT` when `body` returns, `ROLLBACK` when it
    /// throws (the error is rethrown unchanged). Either every change of `body` is stored or none is.
    ///
    /// `IMMEDIATE` takes the write lock up front, so a transaction that reads and then writes cannot fail halfway
    /// with `SQLITE_BUSY` because another connection wrote in between; waiting for the lock honours `busyTimeout`.
    ///
    /// Nesting: calling `transaction` (or any `Database` method) from inside `body` is refused with `.misuse`;
    /// nested atomic steps use `tx.savepoint { }` on the handle, which SQLite implements with SAVEPOINTs. The
    /// handle is only valid inside `body`; keeping it and using it later fails with `.misuse`. Statements that
    /// would begin or end a transaction (`BEGIN`, `COMMIT`, `ROLLBACK`) are refused inside `body`, including in
    /// scripts, so a body cannot commit half of its work.
    @discardableResult
    public func transaction<T>(_ body: (Transaction) throws -> T) throws -> T {
        try withConnection(autocommit: false) { connection in
            try connection.run("BEGIN IMMEDIATE")
            let transaction = Transaction(connection)
            connection.allowsTransactionControl = false
            defer {
                transaction.isActive = false
                connection.allowsTransactionControl = true
            }
            let result: T
            do {
                result = try body(transaction)
            } catch {
                connection.rollbackIfNeeded()
                throw error
            }
            guard !connection.isAutocommit else {
                // SQLite rolled the transaction back on its own after an error the body caught (a full disk, an
                // I/O error): the body's changes are gone, so this is not a success.
                throw Transaction.endedBySQLite
            }
            connection.allowsTransactionControl = true
            do {
                try connection.run("COMMIT")
            } catch {
                connection.rollbackIfNeeded()
                throw error
            }
            return result
        }
    }
}

/// The handle a `transaction` body works through: the same statement methods as `Database`, run inside the open
/// transaction. Not `Sendable`, and invalid once the body returns.
public final class Transaction {
    private let connection: Connection
    fileprivate(set) var isActive = true
    private var savepointDepth = 0

    fileprivate init(_ connection: Connection) {
        self.connection = connection
    }

    /// Runs one statement inside the transaction.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> ExecutionResult {
        try checkActive()
        return try connection.execute(sql, parameters)
    }

    /// Runs a script of several statements inside the transaction (a migration, a schema).
    public func executeScript(_ sql: String) throws {
        try checkActive()
        try connection.executeScript(sql)
    }

    public func query(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> [Row] {
        try checkActive()
        return try connection.run(sql, parameters.map(\.sqlValue))
    }

    public func queryOne(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> Row? {
        try query(sql, parameters).first
    }

    /// The rowid of the most recent successful INSERT in this transaction's connection.
    public var lastInsertRowID: Int64 {
        get throws {
            try checkActive()
            return connection.lastInsertRowID
        }
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int {
        get throws {
            try checkActive()
            return connection.changes
        }
    }

    /// Runs `body` as a nested atomic step: its changes are kept when it returns and undone when it throws,
    /// while the enclosing transaction goes on (and still decides whether anything is committed).
    @discardableResult
    public func savepoint<T>(_ body: (Transaction) throws -> T) throws -> T {
        try checkActive()
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "tokenet_savepoint_\(savepointDepth)"
        try connection.run("SAVEPOINT \(name)")
        do {
            let result = try body(self)
            try connection.run("RELEASE \(name)")
            return result
        } catch {
            // ROLLBACK TO undoes the savepoint's changes but keeps it open; RELEASE then removes it.
            if !connection.isAutocommit {
                _ = try? connection.run("ROLLBACK TO \(name)")
                _ = try? connection.run("RELEASE \(name)")
            }
            throw error
        }
    }

    /// Refuses statements once the body has returned, and once SQLite has rolled the transaction back by itself:
    /// a statement run then would commit on its own, outside the transaction.
    private func checkActive() throws {
        guard isActive else {
            throw StorageError(.misuse, "the transaction has ended; its handle cannot be used outside the body")
        }
        guard !connection.isAutocommit else { throw Self.endedBySQLite }
    }

    fileprivate static let endedBySQLite = StorageError(
        .interrupted,
        "SQLite rolled the transaction back after an earlier error (disk full, I/O error); "
            + "none of its changes were stored")
}
