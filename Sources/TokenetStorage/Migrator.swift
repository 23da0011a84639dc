import Foundation

/// One schema step: applied once, in version order, inside its own transaction.
///
/// `sql` may hold several statements but must not hold `BEGIN`, `COMMIT` or `ROLLBACK`. Foreign keys stay on while
/// it runs, so a migration that rebuilds a referenced table must copy rows before dropping the old table.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// A migration recorded in the database's `schema_migrations` table.
public struct AppliedMigration: Sendable, Equatable {
    public let version: Int
    public let name: String
    /// UTC time of application, ISO 8601 with milliseconds (`2026-01-31T12:00:00.000Z`).
    public let appliedAt: String
}

/// Brings a database's schema up to date from an ordered list of migrations.
///
/// Each migration runs in its own `BEGIN IMMEDIATE` transaction together with its `schema_migrations` record, so
/// a node killed mid-migration restarts with that migration either wholly applied or not at all. Applying is
/// idempotent: recorded versions are skipped. The recorded state is checked (inside every transaction, so two
/// processes migrating at once cannot interleave) before anything is applied, and the database is refused with
/// `.schema` when it is newer than this code, records a migration this code does not have or names differently, or
/// lacks a migration older than one it has. Once up to date, a database that lacks a table its migrations made (one
/// dropped by hand, or lost to damage) is refused with `.schema` too, naming the table, where SQLite's "no such
/// table" would otherwise surface from the first statement that used it.
public struct Migrator: Sendable {
    public let migrations: [Migration]

    /// Refuses (`.schema`) a list whose versions are not positive and strictly increasing, or with an empty name.
    public init(_ migrations: [Migration]) throws {
        var previous = 0
        for migration in migrations {
            guard migration.version > previous else {
                throw StorageError(
                    .schema,
                    "migration versions must be positive and strictly increasing: \(migration.version) "
                        + "('\(migration.name)') follows \(previous)")
            }
            guard !migration.name.isEmpty else {
                throw StorageError(.schema, "migration \(migration.version) has no name")
            }
            previous = migration.version
        }
        self.migrations = migrations
    }

    /// The newest version this code knows (0 without migrations).
    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Applies every pending migration in order and returns the ones applied (empty when already up to date).
    @discardableResult
    public func migrate(_ database: Database) throws -> [Migration] {
        var applied: [Migration] = []
        do {
            while let migration = try database.transaction({ try applyNext($0) }) {
                applied.append(migration)
            }
        } catch let error as StorageError where error.isBusy {
            // At a node's start: SQLite's words alone ("database is locked") said nothing of who or what to do.
            throw StorageError(
                .busy,
                "\(error.message): another process holds a write lock on the database (an sqlite3 shell, a backup, a "
                    + "second node on the same data directory); start the node again once it lets go",
                sql: error.sql, extendedResultCode: error.extendedResultCode, cause: error)
        }
        try checkTables(of: database)
        return applied
    }

    /// The tables the migrations make, found by applying them to an empty in-memory database.
    public func tables() throws -> Set<String> {
        Set(try schema().keys)
    }

    /// The tables the migrations make and the columns of each, found by applying them to an empty in-memory
    /// database.
    public func schema() throws -> [String: Set<String>] {
        let scratch = try Database.openInMemory()
        defer { try? scratch.close() }
        while try scratch.transaction({ try applyNext($0) }) != nil {}
        return try Self.schema(of: scratch)
    }

    private static func schema(of database: Database) throws -> [String: Set<String>] {
        let sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) != 'sqlite_'"
        var schema: [String: Set<String>] = [:]
        for table in try database.query(sql).map({ try $0.text(0) }) {
            schema[table] = Set(
                try database.query("SELECT name FROM pragma_table_info(?)", [table]).map { try $0.text(0) })
        }
        return schema
    }

    /// Refuses a database without every table and column its migrations made (a version recorded for a change that
    /// is not there: a database altered by hand, or restored in part): started, the node said it was ready and then
    /// failed its calls with INTERNAL. Tables and columns of its own beside them are its business.
    private func checkTables(of database: Database) throws {
        let expected = try schema()
        let found = try Self.schema(of: database)
        let missing = Set(expected.keys).subtracting(found.keys).sorted()
        let file = database.path.map { "the database \($0)" } ?? "the database"
        let version = try currentVersion(of: database)
        guard missing.isEmpty else {
            let named = missing.count == 1 ? "the table \(missing[0])" : "the tables \(missing.joined(separator: ", "))"
            throw StorageError(
                .schema,
                "\(file) lacks \(named) of its schema (version \(version)): it was altered or damaged; restore it "
                    + "from a backup")
        }
        let columns = expected.keys.sorted().flatMap { table in
            expected[table, default: []].subtracting(found[table, default: []]).sorted().map { "\(table).\($0)" }
        }
        guard columns.isEmpty else {
            let named =
                columns.count == 1 ? "the column \(columns[0])" : "the columns \(columns.joined(separator: ", "))"
            throw StorageError(
                .schema,
                "\(file) lacks \(named) of its schema (version \(version)): it was altered or damaged; restore it "
                    + "from a backup")
        }
    }

    /// The database's schema version: the highest recorded migration, 0 for a fresh database.
    public func currentVersion(of database: Database) throws -> Int {
        try appliedMigrations(in: database).last?.version ?? 0
    }

    /// The migrations recorded in the database, oldest first.
    public func appliedMigrations(in database: Database) throws -> [AppliedMigration] {
        try database.transaction { try recorded(in: $0) }
    }

    /// Checks the recorded state and applies the first pending migration; nil when there is none.
    private func applyNext(_ transaction: Transaction) throws -> Migration? {
        let applied = try recorded(in: transaction)
        try validate(applied)
        let newest = applied.last?.version ?? 0
        guard let next = migrations.first(where: { $0.version > newest }) else { return nil }
        do {
            try transaction.executeScript(next.sql)
        } catch let error as StorageError {
            throw StorageError(
                error.code, "migration \(next.version) '\(next.name)' failed: \(error.message)", sql: error.sql,
                extendedResultCode: error.extendedResultCode, cause: error)
        }
        try transaction.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [next.version, next.name])
        return next
    }

    private func recorded(in transaction: Transaction) throws -> [AppliedMigration] {
        try refuseForeignTables(in: transaction)
        try transaction.executeScript(Self.createTable)
        return try transaction.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
            .map { row in
                AppliedMigration(
                    version: try row.int("version"), name: try row.text("name"),
                    appliedAt: try row.text("applied_at"))
            }
    }

    /// A database with tables but no record of migrations is another program's (an SQLite file put in the node's
    /// place): the node made its tables beside that program's and carried on, with no word of the data it found.
    private func refuseForeignTables(in transaction: Transaction) throws {
        try Self.refuseForeign(tables: try transaction.query(Self.tablesQuery).map { try $0.text(0) })
    }

    private static let tablesQuery =
        "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) != 'sqlite_' ORDER BY name"

    /// Refuses tables without `schema_migrations` among them (another program's); none at all is a new database.
    private static func refuseForeign(tables: [String]) throws {
        guard !tables.isEmpty, !tables.contains("schema_migrations") else { return }
        // Names from another program's file: control characters escaped, each cut short.
        let shown = tables.prefix(3).map { name in
            let escaped = name.unicodeScalars.map { scalar in
                scalar.properties.generalCategory == .control
                    ? "\\u{\(String(scalar.value, radix: 16, uppercase: true))}" : String(scalar)
            }.joined()
            return escaped.count > 40 ? String(escaped.prefix(40)) + "…" : escaped
        }
        let named = shown.joined(separator: ", ") + (tables.count > 3 ? ", …" : "")
        throw StorageError(
            .schema,
            "the database holds tables of another program (\(named)) and no record of Tokenet's migrations: it is not "
                + "this node's database, and is left untouched; move it away, or give the node another data directory")
    }

    /// Which node's database begins with a migration of this name: a database of another party's node in this
    /// node's place was said to be "written by a newer Tokenet" (its schema's version is higher), which sent the
    /// operator looking for an upgrade.
    static let firstMigrations = ["cards": "a wallet-node", "issuer": "an issuer-node", "provisioning": "a tsp-node"]

    /// Refuses (`.schema`) a database that is not one of these migrations' (another program's tables, another kind of
    /// Tokenet database), as `migrate` would, without changing it: for a node that makes files beside its database
    /// (keys) and must not make them for a database it then refuses.
    public func checkOwnership(of database: Database) throws {
        let tables = try database.query(Self.tablesQuery).map { try $0.text(0) }
        try Self.refuseForeign(tables: tables)
        guard tables.contains("schema_migrations") else { return }
        let first = try database.queryOne(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version LIMIT 1"
        ).map {
            AppliedMigration(
                version: try $0.int("version"), name: try $0.text("name"), appliedAt: try $0.text("applied_at"))
        }
        try refuseOtherKind(first: first)
    }

    /// `checkOwnership(of:)` for the database file at `path`; a path with no file, or an empty one, passes (a first
    /// start).
    public func checkOwnership(ofFileAt path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        try Database.requireFile(at: path, status)
        guard status.st_size > 0 else { return }
        // Read as it is: opened as the node's own, it would have been switched to WAL (its header rewritten, -wal and
        // -shm files made beside it) and its mode narrowed, before being refused as "left untouched".
        let database = try Database.openReadOnly(path: path, immutable: Self.isQuietWAL(path))
        defer { try? database.close() }
        do {
            try checkOwnership(of: database)
        } catch let error as StorageError where error.extendedResultCode == 776 {  // SQLITE_READONLY_ROLLBACK
            // A transaction a crash left in a rollback journal is undone by the first writer, which this look is
            // not: a copy of the file and its journal is recovered and read instead, and the file stays as it is.
            try checkOwnership(ofCopyOf: path)
        }
    }

    /// `checkOwnership(of:)` on a copy of the database at `path` with its rollback journal, opened (and so
    /// recovered) in a directory of its own that is removed afterwards.
    private func checkOwnership(ofCopyOf path: String) throws {
        let manager = FileManager.default
        let scratch = manager.temporaryDirectory.appendingPathComponent("tokenet-check-\(UUID().uuidString)").path
        try manager.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? manager.removeItem(atPath: scratch) }
        let copy = scratch + "/check.sqlite"
        try manager.copyItem(atPath: path, toPath: copy)
        try manager.copyItem(atPath: path + "-journal", toPath: copy + "-journal")
        let database = try Database.open(path: copy)
        defer { try? database.close() }
        try checkOwnership(of: database)
    }

    /// Whether the file at `path` is a WAL database with neither a -wal nor a -shm file beside it: read without
    /// the immutable flag, SQLite would make both (and, read only, could not remove them); with nothing in a WAL,
    /// the file alone is the whole database.
    static func isQuietWAL(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        // The throwing read: `readData(ofLength:)` traps on an error (a directory in the file's place).
        guard let header = try? handle.read(upToCount: 20), header.count == 20,
            header.starts(with: Array("SQLite format 3\0".utf8))
        else { return false }
        let manager = FileManager.default
        return header[18] == 2 && header[19] == 2 && !manager.fileExists(atPath: path + "-wal")
            && !manager.fileExists(atPath: path + "-shm")
    }

    private func refuseOtherKind(first: AppliedMigration?) throws {
        if let first, let ours = migrations.first, first.version == ours.version, first.name != ours.name {
            let whose = Self.firstMigrations[first.name].map { "a database of \($0)" } ?? "another kind of database"
            throw StorageError(
                .schema,
                "the database begins with migration \(first.version) '\(first.name)', where this node's begins with "
                    + "'\(ours.name)': it is \(whose), not this node's, and is left untouched; give each node its own "
                    + "data directory")
        }
    }

    private func validate(_ applied: [AppliedMigration]) throws {
        try refuseOtherKind(first: applied.first)
        let newest = applied.last?.version ?? 0
        guard newest <= latestVersion else {
            throw StorageError(
                .schema,
                "the database schema is at version \(newest), newer than version \(latestVersion), the newest this "
                    + "code knows; it was written by a newer Tokenet and is left untouched: run that Tokenet (or a "
                    + "newer one) on it, or restore the data directory from a copy made before the upgrade")
        }
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for record in applied {
            guard let migration = known[record.version] else {
                throw StorageError(
                    .schema, "the database records migration \(record.version) '\(record.name)', unknown to this code")
            }
            guard migration.name == record.name else {
                throw StorageError(
                    .schema,
                    "the database records migration \(record.version) as '\(record.name)' but this code names it "
                        + "'\(migration.name)'")
            }
        }
        let recordedVersions = Set(applied.map(\.version))
        if let missing = migrations.first(where: { $0.version < newest && !recordedVersions.contains($0.version) }) {
            throw StorageError(
                .schema,
                "migration \(missing.version) '\(missing.name)' was never applied but the database is already at "
                    + "version \(newest); migrations must apply in order")
        }
    }

    private static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        ) STRICT;
        """
}

/// What opening a database did to its schema, for the node's log: it made a new database, or migrated an older one.
/// Logged because the change is one way: a Tokenet older than the migrations refuses the database from then on.
public struct SchemaChange: Sendable, Equatable {
    /// The schema version before: 0 for a new database.
    public let from: Int
    public let to: Int
    /// The names of the migrations applied, oldest first.
    public let migrations: [String]

    /// What `migrate` did, from the migrations it `applied` out of all of them (`among`); nil when it applied none.
    /// The version before is the one of the migration before the first applied (versions may leave gaps).
    public init?(applied: [Migration], among all: [Migration]) {
        guard let first = applied.first, let last = applied.last else { return nil }
        from = all.last(where: { $0.version < first.version })?.version ?? 0
        to = last.version
        migrations = applied.map(\.name)
    }

    /// The log line's message.
    public var message: String {
        from == 0
            ? "database created"
            : "database migrated to a newer schema; a Tokenet older than this one refuses it from now on"
    }

    /// The log line's fields: the file, the versions, and for a migration the migrations applied.
    public func fields(path: String?) -> KeyValuePairs<String, String> {
        let file = path ?? "(in memory)"
        if from == 0 { return ["database": file, "schema": "\(to)"] }
        return [
            "database": file, "schema_from": "\(from)", "schema_to": "\(to)",
            "migrations": migrations.joined(separator: ","),
        ]
    }
}
