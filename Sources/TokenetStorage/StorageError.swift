import CSQLite
import Glibc

/// The one error type of TokenetStorage: a code to switch on, a readable message, the SQL that failed, SQLite's
/// extended result code, and the cause.
///
/// Messages carry `sqlite3_errmsg` and the SQL text but never bound parameter values, so card numbers and keys
/// passed as parameters cannot leak into logs through an error.
public struct StorageError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        /// The database file could not be opened or created (`SQLITE_CANTOPEN`), or it could not be configured.
        case open
        /// Another connection holds a lock and `busy_timeout` ran out (`SQLITE_BUSY`).
        case busy
        /// A table in a shared-cache or the same connection is locked (`SQLITE_LOCKED`).
        case locked
        /// A UNIQUE, PRIMARY KEY, FOREIGN KEY, NOT NULL or CHECK constraint failed; see `constraint`.
        case constraint
        /// The file is not a database or is damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
        case corrupt
        /// The API was used wrongly: closed database, nested transaction, wrong parameter count, unknown column
        /// (and `SQLITE_MISUSE`, `SQLITE_RANGE`).
        case misuse
        /// The schema is not what this code expects: a migration failed validation or the database is newer.
        case schema
        /// The operating system reported an I/O error (`SQLITE_IOERR`).
        case io
        /// The database file was deleted or moved away while it was open (`Database`): a change would go into a
        /// file no later open finds. Only a restart with the file back in place mends it.
        case moved
        /// Something required is missing: the database's directory, or SQLite reported `SQLITE_NOTFOUND`.
        case notFound
        /// A stored value does not have the type the caller asked for (or `SQLITE_MISMATCH`).
        case mismatch
        /// The database or the file system is read-only (`SQLITE_READONLY`).
        case readOnly
        /// The disk is full (`SQLITE_FULL`).
        case full
        /// A string or blob exceeds SQLite's limits (`SQLITE_TOOBIG`).
        case tooBig
        /// Access was denied (`SQLITE_PERM`, `SQLITE_AUTH`).
        case permission
        /// The operation was interrupted or aborted (`SQLITE_INTERRUPT`, `SQLITE_ABORT`).
        case interrupted
        /// SQLite could not allocate memory (`SQLITE_NOMEM`).
        case noMemory
        /// Any other SQL error: syntax errors, unknown tables or columns (`SQLITE_ERROR`).
        case sql
    }

    /// Which kind of constraint failed, decoded from the extended result code.
    public enum Constraint: String, Sendable {
        case unique
        case primaryKey
        case foreignKey
        case notNull
        case check
        case trigger
        case other
    }

    public let code: Code
    public let message: String
    /// The SQL statement that failed, when there was one.
    public let sql: String?
    /// SQLite's extended result code (for example 2067 for `SQLITE_CONSTRAINT_UNIQUE`), when SQLite reported one.
    public let extendedResultCode: Int32?
    public let cause: (any Error)?

    public init(
        _ code: Code, _ message: String, sql: String? = nil, extendedResultCode: Int32? = nil,
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.sql = sql
        self.extendedResultCode = extendedResultCode
        self.cause = cause
    }

    /// The failed constraint, when `code` is `.constraint`.
    public var constraint: Constraint? {
        guard code == .constraint else { return nil }
        // The SQLITE_CONSTRAINT_* macros are expressions Swift does not import: (SQLITE_CONSTRAINT | (n << 8)).
        switch extendedResultCode.map({ $0 >> 8 }) {
        case 8: return .unique
        case 6, 10: return .primaryKey  // PRIMARYKEY, ROWID
        case 3: return .foreignKey
        case 5: return .notNull
        case 1: return .check
        case 7: return .trigger
        default: return .other
        }
    }

    /// True when an insert failed because a row with the same key already exists (UNIQUE or PRIMARY KEY), the
    /// case callers usually turn into "already exists".
    public var isAlreadyExists: Bool {
        constraint == .unique || constraint == .primaryKey
    }

    /// The message with SQLite's code and the SQL: read in logs and in a node's refusal to start, so the code's name
    /// (`corrupt`, `readOnly`), which is for switching on, stays out of it.
    public var description: String {
        var text = message
        if let extendedResultCode { text += " (SQLite result code \(extendedResultCode))" }
        if let sql { text += " [SQL: \(sql)]" }
        if let cause { text += " (cause: \(cause))" }
        return text
    }

    /// Equality ignores the cause, which is not generally comparable.
    public static func == (lhs: StorageError, rhs: StorageError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.sql == rhs.sql
            && lhs.extendedResultCode == rhs.extendedResultCode
    }
}

extension StorageError {
    /// Whether the data directory's disk or file system refused the work (an I/O error, a read-only file or mount,
    /// a file that cannot be opened, no permission): its operator can mend that, where an INTERNAL status read as a
    /// fault of the node's own.
    public var isUnwritableStorage: Bool { [.io, .readOnly, .open, .permission, .moved].contains(code) }

    /// Whether another connection held the database's lock for longer than the busy timeout (SQLITE_BUSY): a
    /// passing state (UNAVAILABLE, try again), where an INTERNAL status read as a fault of the node's own.
    /// SQLITE_LOCKED is not: a conflict within the node's own connection, which waiting does not end.
    public var isBusy: Bool { code == .busy }

    /// What to do about an `isBusy` failure of `party`'s node ("the wallet"), with SQLite's words; ending "try again
    /// once it lets go" unless `thenTryAgain` is false (for a change that must not be repeated).
    public func busyAdvice(of party: String, thenTryAgain: Bool = true) -> String {
        "\(party)'s database was locked by another connection for too long (\(message)): another process holds a "
            + "write lock on it (an sqlite3 shell, a backup, a second node on the same data directory)"
            + (thenTryAgain ? "; try again once it lets go" : "")
    }

    /// What to do about an `isUnwritableStorage` failure of `party`'s node ("the wallet"), with SQLite's words;
    /// ending "then try again" unless `thenTryAgain` is false (for a change that must not be repeated).
    /// A database file gone from under the node (`.moved`) has advice of its own: its message says what to do, and
    /// no check of the disk, nor a retry, mends it.
    public func unwritableStorageAdvice(of party: String, thenTryAgain: Bool = true) -> String {
        if code == .moved { return "\(party) cannot keep its data: \(message)" }
        return "\(party) cannot use its data directory (\(message)); check the disk that holds it, the directory's "
            + "and its files' mode and owner (and lsattr), and whether it is mounted read-only"
            + (thenTryAgain ? ", then try again" : "")
    }
}

extension StorageError {
    /// The error for a failed SQLite call on `connection`: the code from `resultCode`, the message from
    /// `sqlite3_errmsg` (prefixed by `context` when given) and the extended result code.
    static func sqlite(
        _ resultCode: Int32, connection: OpaquePointer?, sql: String?, context: String? = nil
    ) -> StorageError {
        var extended = resultCode
        var detail = String(cString: sqlite3_errstr(resultCode))
        if let connection {
            // sqlite3_errmsg describes the most recent failure on the connection, which is this one.
            extended = sqlite3_extended_errcode(connection)
            if (extended & 0xFF) != (resultCode & 0xFF) { extended = resultCode }
            detail = String(cString: sqlite3_errmsg(connection))
            detail += systemCause(resultCode, sqlite3_system_errno(connection))
        }
        let message = context.map { "\($0): \(detail)" } ?? detail
        return StorageError(code(for: resultCode), message, sql: sql, extendedResultCode: extended)
    }

    /// What the system said when SQLite could not open or use a file, with what to do for the usual causes:
    /// "unable to open database file" alone read the same for a file of another owner and a process out of
    /// descriptors. Empty for other failures, and when SQLite kept no system error.
    static func systemCause(_ resultCode: Int32, _ systemErrno: Int32) -> String {
        guard systemErrno != 0, [SQLITE_CANTOPEN, SQLITE_IOERR].contains(resultCode & 0xFF) else { return "" }
        let said = "\(String(cString: strerror(systemErrno))) (errno \(systemErrno))"
        switch systemErrno {
        case EACCES, EPERM:
            return "; the system said: \(said): check the owner and mode of the file and its directory (this "
                + "process runs as uid \(getuid()))"
        case EMFILE, ENFILE:
            return "; the system said: \(said): the process is out of file descriptors (ulimit -n)"
        default:
            return "; the system said: \(said)"
        }
    }

    /// Maps a primary or extended SQLite result code to a `Code`.
    static func code(for resultCode: Int32) -> Code {
        switch resultCode & 0xFF {
        case SQLITE_BUSY: return .busy
        case SQLITE_LOCKED: return .locked
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt
        case SQLITE_MISUSE, SQLITE_RANGE: return .misuse
        case SQLITE_SCHEMA: return .schema
        case SQLITE_IOERR: return .io
        case SQLITE_CANTOPEN: return .open
        case SQLITE_NOTFOUND: return .notFound
        case SQLITE_MISMATCH: return .mismatch
        case SQLITE_READONLY: return .readOnly
        case SQLITE_FULL: return .full
        case SQLITE_TOOBIG: return .tooBig
        case SQLITE_PERM, SQLITE_AUTH: return .permission
        case SQLITE_INTERRUPT, SQLITE_ABORT: return .interrupted
        case SQLITE_NOMEM: return .noMemory
        default: return .sql
        }
    }
}
