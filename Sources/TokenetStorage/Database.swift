import CSQLite
import Foundation
import Synchronization

/// A node's SQLite database: one connection for changes and one for reads, shared by every task of the process.
///
/// **Concurrency.** `Database` is a `Sendable` final class that serialises all changes behind a `Mutex`: one
/// statement or one transaction runs at a time. A node's state changes are small and SQLite allows only one writer
/// anyway, so a single serialised connection is simple and correct; the price is that a call blocks its thread while
/// it waits for the mutex and for the disk (each commit is an fsync), which is why transaction bodies are
/// synchronous closures and should do nothing but database work.
///
/// **Reads.** A `query` outside a transaction that only reads (a `SELECT`) runs on a second connection behind a
/// mutex of its own. In WAL mode a reader never waits for a writer, so a listing answers at once even while a change
/// waits out another process's lock (an operator's `sqlite3` shell holding a transaction) for up to the busy timeout;
/// on the one connection it waited behind that change. Each read sees every change committed before it began, so a
/// read after a change that returned finds it. Reads inside a transaction body go through its `Transaction` and see
/// the transaction's own changes. In-memory databases have the one connection only.
///
/// **Re-entrance.** Calling `Database` from inside a `transaction` body on the same thread would deadlock on the
/// mutex; it is detected and refused with `.misuse`. Use the `Transaction` handle (and `savepoint`) instead.
///
/// **Autocommit.** `execute`/`query` outside a transaction each run as their own transaction. A statement that
/// leaves a transaction open (`BEGIN` through `execute`) is rolled back and refused: transactions go through
/// `transaction { }`, which cannot forget to end them.
public final class Database: Sendable {
    public struct Options: Sendable {
        /// How long a statement waits for a lock held by another connection (another process, such as an
        /// operator's `sqlite3` shell) before failing with `.busy`.
        public var busyTimeout: Duration
        /// How many prepared statements are kept, keyed by their SQL text.
        public var statementCacheCapacity: Int

        public init(busyTimeout: Duration = .seconds(5), statementCacheCapacity: Int = 64) {
            self.busyTimeout = busyTimeout
            self.statementCacheCapacity = statementCacheCapacity
        }
    }

    /// The database file, or nil for an in-memory database.
    public let path: String?
    private let connection: Mutex<Connection?>
    /// The read connection (`PRAGMA query_only`), nil once closed and for databases without one (`hasReader`).
    private let reader: Mutex<Connection?>
    private let hasReader: Bool
    /// The thread currently holding `connection`'s lock (0 when none), to refuse re-entrance instead of deadlocking.
    /// Only the holder ever stores its own identity, so a thread that reads its own identity holds the lock.
    let holder = Atomic<UInt>(0)
    /// Why changes are refused (`refuseChanges`); nil while they are taken.
    private let refusal = Mutex<String?>(nil)

    private init(path: String?, connection: consuming sending Connection, reader: consuming sending Connection? = nil) {
        self.path = path
        self.connection = Mutex(connection)
        self.hasReader = reader != nil
        self.reader = Mutex(reader)
    }

    /// Opens the database at `path`, creating the file if needed (its directory must exist), and configures it:
    /// WAL journal, `synchronous=FULL`, foreign keys on, busy timeout.
    public static func open(path: String, options: Options = Options()) throws -> Database {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else {
            throw StorageError(.misuse, "'\(path)' is not a database file path; use openInMemory for a test database")
        }
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        let checked = directory.isEmpty ? "." : directory
        guard FileManager.default.fileExists(atPath: checked, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StorageError(.notFound, "cannot open database at \(path): directory \(checked) does not exist")
        }
        var status = stat()
        if stat(path, &status) == 0 {
            try requireFile(at: path, status)
        } else if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
            // SQLite said only "unable to open database file".
            throw StorageError(
                .open,
                "cannot open database at \(path): it is a symbolic link to \(target), which does not exist; make the "
                    + "link point at the database, or remove it for a new one")
        }
        restrictToOwner(path)
        let connection = try Connection(path: path, cacheCapacity: options.statementCacheCapacity)
        // SQLite falls back to read-only when it may not write the file, and says so only at the first write: a
        // node would start, answer reads, and fail every change. Refused here, the node stops at start instead.
        guard sqlite3_db_readonly(connection.handle, "main") != 1 else {
            throw StorageError(
                .readOnly,
                "database \(path) is not writable (SQLite could open it for reading only); check the permissions "
                    + "and owner of the file, of its -wal and -shm files and of its directory, their immutable "
                    + "attribute (`lsattr`) and the mount")
        }
        try configure(connection, options: options, inMemory: false)
        // Opened once the file is in WAL mode, which is what lets it read while the other connection writes.
        let reader = try Connection(path: path, cacheCapacity: options.statementCacheCapacity)
        sqlite3_busy_timeout(reader.handle, busyTimeoutMilliseconds(options.busyTimeout))
        try reader.run("PRAGMA query_only=1", cached: false)
        return Database(path: path, connection: connection, reader: reader)
    }

    /// Refuses anything but a regular file (`status` is `path`'s) where the database belongs: a directory there
    /// crashed the node's first look at the file, and SQLite says only "unable to open database file".
    static func requireFile(at path: String, _ status: stat) throws {
        guard (status.st_mode & S_IFMT) != S_IFREG else { return }
        let kind = (status.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "not a regular file"
        throw StorageError(
            .open,
            "cannot open database at \(path): it is \(kind); move it away (the node keeps its database in this "
                + "file, and makes a new one when there is none)")
    }

    /// Opens the existing database at `path` for reading only, as it is: no journal mode, no permissions changed.
    /// For a look at a file before the node takes it as its own (`Migrator.checkOwnership`). `immutable` reads the
    /// file alone, with no lock and no -wal or -shm file: for a WAL database that has none (SQLite would otherwise
    /// make both, and a reader cannot remove them).
    public static func openReadOnly(path: String, immutable: Bool = false, options: Options = Options()) throws
        -> Database
    {
        let connection = try Connection(
            path: immutable ? Self.immutableURI(path) : path, cacheCapacity: options.statementCacheCapacity,
            readOnly: true, uri: immutable)
        sqlite3_busy_timeout(connection.handle, busyTimeoutMilliseconds(options.busyTimeout))
        return Database(path: path, connection: connection)
    }

    /// `file:PATH?immutable=1`, with the characters a URI gives a meaning to escaped.
    private static func immutableURI(_ path: String) -> String {
        var escaped = ""
        for byte in path.utf8 {
            if byte == UInt8(ascii: "%") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte < 0x20 {
                escaped += String(format: "%%%02X", byte)
            } else {
                escaped += String(decoding: [byte], as: UTF8.self)
            }
        }
        return "file:\(escaped)?immutable=1"
    }

    /// A database holds what only its node may read (one-time codes in an issuer's outbox, cardholders' contact
    /// details): a new file is created 0600, and an existing one (with its -wal and -shm files) loses any group and
    /// other permissions. SQLite gives the -wal and -shm files the database file's permissions; before, all three
    /// were created 0644 under the usual umask, readable by every user of the machine.
    static func restrictToOwner(_ path: String) {
        let created = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 {
            Glibc.close(created)
            return
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var status = stat()
            guard stat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_mode & 0o077 != 0,
                status.st_uid == geteuid()
            else { continue }
            _ = chmod(file, status.st_mode & 0o700)
        }
    }

    /// Opens a private in-memory database (for tests): same settings except the journal, which cannot be WAL.
    public static func openInMemory(options: Options = Options()) throws -> Database {
        let connection = try Connection(path: ":memory:", cacheCapacity: options.statementCacheCapacity)
        try configure(connection, options: options, inMemory: true)
        return Database(path: nil, connection: connection)
    }

    /// SQLite takes an Int32 of milliseconds (about 24 days): a longer timeout waits that long, a negative one not
    /// at all, and neither overflows on the way.
    private static func busyTimeoutMilliseconds(_ timeout: Duration) -> Int32 {
        let (seconds, attoseconds) = timeout.components
        if seconds < 0 { return 0 }
        if seconds >= Int64(Int32.max) / 1000 { return Int32.max }
        return Int32(clamping: max(seconds * 1000 + attoseconds / 1_000_000_000_000_000, 0))
    }

    private static func configure(_ connection: Connection, options: Options, inMemory: Bool) throws {
        sqlite3_busy_timeout(connection.handle, busyTimeoutMilliseconds(options.busyTimeout))
        if !inMemory {
            // WAL: a commit appends to the -wal file and readers never block the writer. A transaction is
            // committed once its commit record is in the WAL; a process killed mid-transaction leaves frames
            // without a commit record, which the next open ignores, so nothing is half-written. This also reads
            // the file header, so a file that is not a database fails here with `.corrupt`.
            let mode = try connection.run("PRAGMA journal_mode=WAL", cached: false).first?.get(0, as: String.self)
            guard mode?.lowercased() == "wal" else {
                throw StorageError(.open, "cannot switch the database to WAL (journal_mode is \(mode ?? "unknown"))")
            }
        }
        // synchronous=FULL: every COMMIT fsyncs the WAL before returning. Against SIGKILL alone WAL with NORMAL
        // would already suffice (the written WAL frames are in the operating system's cache and survive the
        // process); FULL extends the guarantee to power loss and kernel crashes, so a transaction whose commit
        // returned (and that a node may have acknowledged to a peer) is never lost.
        try connection.run("PRAGMA synchronous=FULL", cached: false)
        // Foreign keys are off by default in SQLite for compatibility; Tokenet's schemas rely on them.
        try connection.run("PRAGMA foreign_keys=ON", cached: false)
        let foreignKeys = try connection.run("PRAGMA foreign_keys", cached: false).first?.get(0, as: Int.self)
        guard foreignKeys == 1 else {
            throw StorageError(.open, "this SQLite build does not enforce foreign keys")
        }
    }

    /// Closes the connection (SQLite checkpoints the WAL into the main file). Later calls fail with `.misuse`;
    /// closing twice is harmless. Deinitialising the database closes it too.
    public func close() throws {
        try checkNotReentrant()
        // Dropping the only reference runs the Connection deinit, which finalizes statements and closes the handle;
        // callers waiting for the lock then find the database closed.
        reader.withLock { $0 = nil }
        connection.withLock { $0 = nil }
    }

    /// From now on, every change (and every query on the write connection) that has not begun is refused with
    /// `.interrupted` and `reason`, until `acceptChanges()`; reads on the read connection and the change under way go
    /// on. For a node that stops: the handlers of the calls it ended may still wait their turn on the one
    /// connection, each for up to the busy timeout while another process holds the lock, and its close waited
    /// behind all of them, for changes no caller waits for any more.
    public func refuseChanges(because reason: String) {
        refusal.withLock { $0 = reason }
    }

    /// Takes changes again after `refuseChanges`: for a node's own last writes once its handlers have returned (the
    /// broker's delivery progress, flushed as it shuts down).
    public func acceptChanges() {
        refusal.withLock { $0 = nil }
    }

    public var isClosed: Bool {
        // Inside a transaction body the lock is already held by this thread and the database is open.
        if holder.load(ordering: .relaxed) == Self.currentThread { return false }
        return connection.withLock { $0 == nil }
    }

    /// Runs one statement (an INSERT, UPDATE, DELETE or schema change) as its own transaction.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> ExecutionResult {
        try withConnection { try $0.execute(sql, parameters) }
    }

    /// Runs a script of several statements without parameters, each in autocommit mode (for an atomic script, call
    /// `executeScript` on a `Transaction`).
    public func executeScript(_ sql: String) throws {
        try withConnection { try $0.executeScript(sql) }
    }

    /// Runs a query and returns all its rows. A statement that only reads runs on the read connection, so it does
    /// not wait for a change in progress (see **Reads** above); anything else runs as `execute` does.
    public func query(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> [Row] {
        let values = parameters.map(\.sqlValue)
        if hasReader && Statement.mayOnlyRead(sql) {
            try checkNotReentrant()
            let rows = try reader.withLock { reader -> [Row]? in
                guard let reader else {
                    throw StorageError(.misuse, "the database \(path ?? ":memory:") is closed")
                }
                return try reader.runIfReadOnly(sql, values)
            }
            if let rows { return rows }
        }
        return try withConnection { try $0.run(sql, values) }
    }

    /// Runs a query and returns its first row, or nil when it returns none.
    public func queryOne(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> Row? {
        try query(sql, parameters).first
    }

    /// Gives `body` exclusive use of the open connection. With `autocommit`, a body that leaves a transaction open
    /// is refused and the transaction rolled back.
    func withConnection<T>(autocommit: Bool = true, _ body: (Connection) throws -> T) throws -> T {
        try checkNotReentrant()
        return try connection.withLock { connection -> T in
            guard let connection else {
                throw StorageError(.misuse, "the database \(path ?? ":memory:") is closed")
            }
            if path != nil, connection.fileHasMoved { throw movedAway() }
            if let reason = refusal.withLock({ $0 }) { throw StorageError(.interrupted, reason) }
            holder.store(Self.currentThread, ordering: .relaxed)
            defer { holder.store(0, ordering: .relaxed) }
            let result = try body(connection)
            if autocommit && !connection.isAutocommit {
                connection.rollbackIfNeeded()
                throw StorageError(
                    .misuse, "a statement left a transaction open; use Database.transaction, which always ends it")
            }
            return result
        }
    }

    /// The error for every change once the database file was deleted or moved away while open (checked before
    /// each, at the cost of one `stat`): nothing written now would be found by the next start.
    private func movedAway() -> StorageError {
        let file = path ?? ":memory:"
        return StorageError(
            .moved,
            "the database file \(file) was deleted or moved away (or can no longer be looked up) while the node ran, "
                + "and what it writes now would be lost: stop the node, put the file back (or restore it from a "
                + "backup) and start it again")
    }

    private func checkNotReentrant() throws {
        if holder.load(ordering: .relaxed) == Self.currentThread {
            throw StorageError(
                .misuse,
                "the database is already in use on this thread (called from inside a transaction body?); "
                    + "use the Transaction handle, and tx.savepoint for nesting")
        }
    }

    private static var currentThread: UInt {
        #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
        #else
            UInt(pthread_self())
        #endif
    }
}

/// What a statement changed.
public struct ExecutionResult: Sendable, Equatable {
    /// Rows inserted, updated or deleted by the statement.
    public var changes: Int
    /// The rowid of the most recent successful INSERT on the connection (unchanged by other statements).
    public var lastInsertRowID: Int64
}

extension Connection {
    /// Runs one statement and reports what it changed, read while the connection is still exclusively held.
    func execute(_ sql: String, _ parameters: [any SQLValueConvertible]) throws -> ExecutionResult {
        let before = totalChanges
        try run(sql, parameters.map(\.sqlValue))
        // sqlite3_changes keeps the count of the last INSERT/UPDATE/DELETE, so a SELECT or a schema change would
        // report a stale count; the connection's running total tells whether this statement changed anything.
        return ExecutionResult(changes: totalChanges == before ? 0 : changes, lastInsertRowID: lastInsertRowID)
    }
}
