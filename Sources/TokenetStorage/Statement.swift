import CSQLite

/// SQLite's `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns, so Swift buffers
/// only need to live for the call. The C macro is a cast Swift cannot import.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement: owns its `sqlite3_stmt` and finalizes it in `deinit`.
///
/// Not thread-safe; only used by its `Connection`, which the `Database` mutex serialises.
final class Statement {
    let handle: OpaquePointer
    /// The connection the statement belongs to, for error messages; the `Connection` outlives its statements.
    private let connection: OpaquePointer
    let sql: String

    /// Prepares exactly one statement. SQL holding more than one statement is refused so that a caller never
    /// silently loses the statements after the first (scripts go through `Connection.executeScript`).
    init(connection: OpaquePointer, sql: String) throws {
        self.connection = connection
        self.sql = sql
        var statement: OpaquePointer?
        var extra: OpaquePointer?
        var tailResult = SQLITE_OK
        let result = sql.withCString { text -> Int32 in
            var tail: UnsafePointer<CChar>?
            let result = sqlite3_prepare_v2(connection, text, -1, &statement, &tail)
            if result == SQLITE_OK, let tail, tail.pointee != 0 {
                // Preparing the rest tells a second statement apart from trailing whitespace or comments.
                tailResult = sqlite3_prepare_v2(connection, tail, -1, &extra, nil)
            }
            return result
        }
        guard result == SQLITE_OK else {
            sqlite3_finalize(statement)
            throw StorageError.sqlite(result, connection: connection, sql: sql, context: "cannot prepare statement")
        }
        guard let statement else {
            throw StorageError(.misuse, "the SQL holds no statement", sql: sql)
        }
        if extra != nil || tailResult != SQLITE_OK {
            // A tail that does not prepare is still text after the first statement (garbage, or a second
            // statement that depends on the first, such as an INSERT into a table the first creates).
            sqlite3_finalize(extra)
            sqlite3_finalize(statement)
            throw StorageError(
                .misuse, "the SQL holds more than one statement; use executeScript", sql: sql,
                extendedResultCode: tailResult == SQLITE_OK ? nil : tailResult)
        }
        handle = statement
        controlsTransaction = Self.controlsTransaction(sql)
    }

    /// True for statements that begin or end a transaction (`BEGIN`, `COMMIT`, `END`, `ROLLBACK` but not
    /// `ROLLBACK TO`), which `Connection` refuses while a `Transaction` body runs.
    let controlsTransaction: Bool

    deinit {
        sqlite3_finalize(handle)
    }

    /// Binds, runs to completion, and returns every row; the statement is reset afterwards even on failure, so a
    /// cached statement never keeps a read transaction open.
    func run(_ parameters: [SQLValue]) throws -> [Row] {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(parameters)
        var rows: [Row] = []
        var columns: ColumnNames?
        while true {
            let result = sqlite3_step(handle)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else {
                throw StorageError.sqlite(result, connection: connection, sql: sql)
            }
            // Names are read per run, not per prepare: SQLite re-prepares after schema changes (`SELECT *`).
            let names = columns ?? ColumnNames(columnNames())
            columns = names
            rows.append(Row(values: currentValues(), columns: names))
        }
        return rows
    }

    private func bind(_ parameters: [SQLValue]) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard parameters.count == expected else {
            throw StorageError(
                .misuse, "the statement takes \(expected) parameters but \(parameters.count) were given", sql: sql)
        }
        for (offset, value) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null:
                result = sqlite3_bind_null(handle, index)
            case .integer(let number):
                result = sqlite3_bind_int64(handle, index, number)
            case .real(let number):
                result = sqlite3_bind_double(handle, index, number)
            case .text(let string) where string.isEmpty:
                // A NULL pointer would bind NULL, so an empty string points at a valid empty C string.
                result = sqlite3_bind_text64(handle, index, "", 0, transient, UInt8(SQLITE_UTF8))
            case .text(let string):
                var string = string
                // Bound with an explicit byte length, so text holding U+0000 is stored whole.
                result = string.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { chars in
                        sqlite3_bind_text64(
                            handle, index, chars.baseAddress, sqlite3_uint64(chars.count), transient,
                            UInt8(SQLITE_UTF8))
                    }
                }
            case .blob(let bytes):
                if bytes.isEmpty {
                    // sqlite3_bind_blob with a NULL pointer binds NULL; a zero-length zeroblob is an empty blob.
                    result = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    result = bytes.withUnsafeBytes { raw in
                        sqlite3_bind_blob64(handle, index, raw.baseAddress, sqlite3_uint64(raw.count), transient)
                    }
                }
            }
            guard result == SQLITE_OK else {
                throw StorageError.sqlite(
                    result, connection: connection, sql: sql, context: "cannot bind parameter \(index)")
            }
        }
    }

    private func columnNames() -> [String] {
        (0..<sqlite3_column_count(handle)).map { column in
            sqlite3_column_name(handle, column).map { String(cString: $0) } ?? ""
        }
    }

    private func currentValues() -> [SQLValue] {
        (0..<sqlite3_column_count(handle)).map { column in
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER:
                return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT:
                return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                // Text pointer first, then its byte length, as the SQLite documentation prescribes.
                let text = sqlite3_column_text(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                guard let text else { return .text("") }
                return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
            case SQLITE_BLOB:
                let bytes = sqlite3_column_blob(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                guard let bytes, count > 0 else { return .blob([]) }
                return .blob([UInt8](UnsafeRawBufferPointer(start: bytes, count: count)))
            default:
                return .null
            }
        }
    }
}

extension Statement {
    /// Whether `sql` starts with a transaction-control keyword, looking past whitespace and comments.
    static func controlsTransaction(_ sql: String) -> Bool {
        let words = leadingWords(sql, limit: 3)
        switch words.first {
        case "BEGIN", "COMMIT", "END": return true
        case "ROLLBACK": return !words.contains("TO")  // ROLLBACK [TRANSACTION] TO name stays in the transaction
        default: return false
        }
    }

    /// Whether `sql` is a query that may only read (`SELECT`, or `WITH`/`VALUES`, which `Connection.runIfReadOnly`
    /// then checks with SQLite): a quick first test, so that statements with other leading words (`PRAGMA`, which
    /// may set something on the connection it runs on) never reach the read connection.
    static func mayOnlyRead(_ sql: String) -> Bool {
        switch leadingWords(sql, limit: 1).first {
        case "SELECT", "WITH", "VALUES": return true
        default: return false
        }
    }

    /// Up to `limit` leading keywords of `sql`, upper-cased; scanning stops at the first character that is neither
    /// a letter, whitespace, part of a comment nor a semicolon before the first word.
    static func leadingWords(_ sql: String, limit: Int) -> [String] {
        var words: [String] = []
        var current = ""
        var scalars = sql.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = scalars.next()
        func finishWord() {
            if !current.isEmpty { words.append(current.uppercased()) }
            current = ""
        }
        while let scalar = pending, words.count < limit {
            pending = scalars.next()
            if scalar.properties.isAlphabetic && scalar.isASCII {
                current.unicodeScalars.append(scalar)
            } else if scalar.properties.isWhitespace {
                finishWord()
            } else if scalar == ";" && words.isEmpty && current.isEmpty {
                // Empty statements before the first word: SQLite skips them (";COMMIT" is a COMMIT).
                continue
            } else if scalar == "-" && pending == "-" {
                finishWord()
                while let next = pending, next != "\n" { pending = scalars.next() }
            } else if scalar == "/" && pending == "*" {
                finishWord()
                pending = scalars.next()
                var previous: Unicode.Scalar = " "
                while let next = pending, !(previous == "*" && next == "/") {
                    previous = next
                    pending = scalars.next()
                }
                pending = scalars.next()
            } else {
                break
            }
        }
        finishWord()
        return Array(words.prefix(limit))
    }
}
