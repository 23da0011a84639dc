import Foundation
import Testing

@testable import TokenetStorage

@Suite struct MigratorTests {
    static let migrations = [
        Migration(version: 1, name: "cards", sql: "CREATE TABLE cards (id INTEGER PRIMARY KEY, reference TEXT);"),
        Migration(
            version: 2, name: "tokens",
            sql: """
                CREATE TABLE tokens (token TEXT PRIMARY KEY, card INTEGER NOT NULL REFERENCES cards (id));
                CREATE INDEX tokens_by_card ON tokens (card);
                """),
        Migration(
            version: 5, name: "card status", sql: "ALTER TABLE cards ADD COLUMN status TEXT NOT NULL DEFAULT 'active';"),
    ]

    /// A database another process holds a write lock on, at a node's start, is said so with what to do: SQLite's
    /// "database is locked" was all a node's start said.
    @Test func aDatabaseLockedAtStartIsSaidSo() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let lock = try HeldLock(on: path)
        defer { lock.release() }
        let database = try Database.open(path: path, options: .init(busyTimeout: .milliseconds(50)))
        #expect {
            try Migrator(Self.migrations).migrate(database)
        } throws: { error in
            let error = error as? StorageError
            return error?.code == .busy
                && error?.message.hasSuffix(
                    ": another process holds a write lock on the database (an sqlite3 shell, a backup, a second node "
                        + "on the same data directory); start the node again once it lets go") == true
        }
    }

    @Test func migrationsApplyOnceInOrderAndAreRecorded() throws {
        let database = try Database.openInMemory()
        let migrator = try Migrator(Self.migrations)
        #expect(try migrator.currentVersion(of: database) == 0)
        let applied = try migrator.migrate(database)
        #expect(applied.map(\.version) == [1, 2, 5])
        #expect(try migrator.currentVersion(of: database) == 5)
        let records = try migrator.appliedMigrations(in: database)
        #expect(records.map(\.version) == [1, 2, 5])
        #expect(records.map(\.name) == ["cards", "tokens", "card status"])
        #expect(records.allSatisfy { $0.appliedAt.hasSuffix("Z") && $0.appliedAt.count == 24 })
        try database.execute("INSERT INTO cards (reference) VALUES ('c')")
        #expect(try database.queryOne("SELECT status FROM cards")?.text("status") == "active")
    }

    @Test func reRunningIsANoOp() throws {
        let database = try Database.openInMemory()
        let migrator = try Migrator(Self.migrations)
        try migrator.migrate(database)
        let before = try migrator.appliedMigrations(in: database)
        #expect(try migrator.migrate(database).isEmpty)
        #expect(try migrator.appliedMigrations(in: database) == before)
    }

    @Test func newMigrationsApplyOnTopOfOldOnes() throws {
        let database = try Database.openInMemory()
        try Migrator(Array(Self.migrations.prefix(1))).migrate(database)
        let applied = try Migrator(Self.migrations).migrate(database)
        #expect(applied.map(\.version) == [2, 5])
    }

    /// What a start did to the schema, for the node's log: a new database, or one migrated from an older version
    /// (versions may leave gaps: after 2 comes 5).
    @Test func aSchemaChangeNamesTheVersionsAndTheMigrations() throws {
        let database = try Database.openInMemory()
        let created = SchemaChange(
            applied: try Migrator(Array(Self.migrations.prefix(2))).migrate(database), among: Self.migrations)
        #expect(created?.from == 0)
        #expect(created?.to == 2)
        #expect(created?.message == "database created")
        let migrated = SchemaChange(applied: try Migrator(Self.migrations).migrate(database), among: Self.migrations)
        #expect(migrated?.from == 2)
        #expect(migrated?.to == 5)
        #expect(migrated?.migrations == ["card status"])
        #expect(migrated?.message.contains("a Tokenet older than this one refuses it from now on") == true)
        #expect(
            Array(migrated?.fields(path: "/data/node.sqlite") ?? [:]).map { "\($0.key)=\($0.value)" } == [
                "database=/data/node.sqlite", "schema_from=2", "schema_to=5", "migrations=card status",
            ])
        #expect(SchemaChange(applied: try Migrator(Self.migrations).migrate(database), among: Self.migrations) == nil)
    }

    @Test func aNewerDatabaseIsRefusedNamingBothVersions() throws {
        let database = try Database.openInMemory()
        try Migrator(Self.migrations).migrate(database)
        let older = try Migrator(Array(Self.migrations.prefix(2)))
        let error = #expect(throws: StorageError.self) { try older.migrate(database) }
        #expect(error?.code == .schema)
        #expect(error?.message.contains("version 5") == true)
        #expect(error?.message.contains("version 2") == true)
        #expect(error?.message.contains("restore the data directory from a copy made before the upgrade") == true)
        #expect(try Migrator(Self.migrations).currentVersion(of: database) == 5)
    }

    @Test func aFailingMigrationLeavesNoTraceAndEarlierOnesStay() throws {
        let database = try Database.openInMemory()
        let broken =
            Self.migrations.prefix(2) + [
                Migration(
                    version: 3, name: "broken",
                    sql:
                        "CREATE TABLE half (x); INSERT INTO cards (reference) VALUES ('x'); INSERT INTO nowhere VALUES (1);"
                )
            ]
        let error = #expect(throws: StorageError.self) { try Migrator(Array(broken)).migrate(database) }
        #expect(error?.code == .sql)
        #expect(error?.message.contains("migration 3 'broken'") == true)
        #expect(error?.sql?.contains("nowhere") == true)
        #expect(try Migrator(Self.migrations).currentVersion(of: database) == 2)
        #expect(try database.query("SELECT name FROM sqlite_schema WHERE name = 'half'").isEmpty)
        #expect(try database.queryOne("SELECT count(*) FROM cards")?.int(0) == 0)
    }

    @Test func aMigrationThatCommitsByItselfIsRefusedBeforeCommitting() throws {
        let database = try Database.openInMemory()
        let committing = Migration(
            version: 1, name: "commits", sql: "CREATE TABLE early (x); COMMIT; CREATE TABLE late (x);")
        let error = #expect(throws: StorageError.self) { try Migrator([committing]).migrate(database) }
        #expect(error?.code == .misuse)
        #expect(error?.message.contains("migration 1 'commits'") == true)
        #expect(try database.query("SELECT name FROM sqlite_schema WHERE name IN ('early', 'late')").isEmpty)
        #expect(try Migrator([committing]).currentVersion(of: database) == 0)
    }

    @Test func aRenamedOrUnknownRecordedMigrationIsRefused() throws {
        let database = try Database.openInMemory()
        try Migrator(Self.migrations).migrate(database)
        var renamed = Self.migrations
        renamed[1] = Migration(version: 2, name: "tokens v2", sql: renamed[1].sql)
        let nameError = #expect(throws: StorageError.self) { try Migrator(renamed).migrate(database) }
        #expect(nameError?.code == .schema)
        #expect(nameError?.message.contains("'tokens v2'") == true)

        let withoutTwo = [Self.migrations[0], Self.migrations[2]]
        let unknown = #expect(throws: StorageError.self) { try Migrator(withoutTwo).migrate(database) }
        #expect(unknown?.message.contains("unknown to this code") == true)
    }

    /// Another party's database under this node's file name: named as such, not as one "written by a newer
    /// Tokenet" (its schema is at a higher version) or by a renamed first migration.
    @Test func anotherNodesDatabaseIsNamedAsSuch() throws {
        let database = try Database.openInMemory()
        try Migrator([Migration(version: 1, name: "issuer", sql: "CREATE TABLE a (id INTEGER);")]).migrate(database)
        let error = #expect(throws: StorageError.self) { try Migrator(Self.migrations).migrate(database) }
        #expect(error?.code == .schema)
        #expect(
            error?.message
                == "the database begins with migration 1 'issuer', where this node's begins with 'cards': it is a "
                + "database of an issuer-node, not this node's, and is left untouched; give each node its own data "
                + "directory")
    }

    /// An SQLite file of another program (tables, but no record of migrations) is left as it is: the node added its
    /// own tables to it and carried on.
    @Test func anotherProgramsDatabaseIsLeftUntouched() throws {
        let database = try Database.openInMemory()
        try database.execute("CREATE TABLE photos (a)")
        let error = #expect(throws: StorageError.self) { try Migrator(Self.migrations).migrate(database) }
        #expect(error?.code == .schema)
        #expect(error?.message.hasPrefix("the database holds tables of another program (photos)") == true)
        #expect(
            try database.query("SELECT name FROM sqlite_master WHERE type = 'table'").map { try $0.text(0) } == [
                "photos"
            ])
    }

    /// The check before a node takes a file reads it as it is: opened as the node's own database, a foreign file
    /// was switched to WAL (its header rewritten, -wal and -shm files made beside it) and its mode narrowed, before
    /// being refused as "left untouched".
    @Test func aForeignFileOnDiskIsCheckedWithoutBeingChanged() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("photos.sqlite")
        let foreign = try Database.open(path: path)
        try foreign.execute("PRAGMA journal_mode=DELETE")
        try foreign.execute("CREATE TABLE photos (a)")
        try foreign.close()
        #expect(chmod(path, 0o644) == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = #expect(throws: StorageError.self) { try Migrator(Self.migrations).checkOwnership(ofFileAt: path) }
        #expect(error?.message.hasPrefix("the database holds tables of another program (photos)") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o644)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: path + "-shm"))
        // A WAL database of another program, read without the immutable flag, gained -wal and -shm files.
        let wal = directory.path("wal.sqlite")
        let walForeign = try Database.open(path: wal)
        try walForeign.execute("CREATE TABLE notes (a)")
        try walForeign.close()
        let walBefore = try Data(contentsOf: URL(fileURLWithPath: wal))
        #expect(throws: StorageError.self) { try Migrator(Self.migrations).checkOwnership(ofFileAt: wal) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: wal)) == walBefore)
        #expect(!FileManager.default.fileExists(atPath: wal + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: wal + "-shm"))
        // A Tokenet database of these migrations passes, and no file at all is a first start.
        let own = directory.path("own.sqlite")
        let database = try Database.open(path: own)
        try Migrator(Self.migrations).migrate(database)
        try database.close()
        try Migrator(Self.migrations).checkOwnership(ofFileAt: own)
        try Migrator(Self.migrations).checkOwnership(ofFileAt: directory.path("none.sqlite"))
    }

    @Test func aMigrationOlderThanTheDatabaseButNeverAppliedIsRefused() throws {
        let database = try Database.openInMemory()
        try Migrator([Self.migrations[0], Self.migrations[2]]).migrate(database)
        let error = #expect(throws: StorageError.self) { try Migrator(Self.migrations).migrate(database) }
        #expect(error?.code == .schema)
        #expect(error?.message.contains("migration 2 'tokens' was never applied") == true)
    }

    @Test(arguments: [
        [Migration(version: 0, name: "zero", sql: "")],
        [Migration(version: 2, name: "b", sql: ""), Migration(version: 1, name: "a", sql: "")],
        [Migration(version: 1, name: "a", sql: ""), Migration(version: 1, name: "again", sql: "")],
        [Migration(version: 1, name: "", sql: "")],
    ])
    func badMigrationListsAreRefused(migrations: [Migration]) {
        let error = #expect(throws: StorageError.self) { try Migrator(migrations) }
        #expect(error?.code == .schema)
    }

    /// A table the migrations made that is gone (dropped by hand, lost to damage) is named when the database is
    /// opened, where SQLite's "no such table" came from whichever statement first used it; a table of the node's own
    /// beside the migrations' is no concern of the check.
    @Test func aDatabaseWithoutATableOfItsSchemaIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let migrator = try Migrator(Self.migrations)
        #expect(try migrator.tables() == ["cards", "tokens", "schema_migrations"])
        let database = try Database.open(path: path)
        try migrator.migrate(database)
        try database.execute("CREATE TABLE own (x)")
        #expect(try migrator.migrate(database).isEmpty)
        try database.execute("DROP TABLE tokens")
        let error = #expect(throws: StorageError.self) { try migrator.migrate(database) }
        #expect(error?.code == .schema)
        #expect(
            error?.message
                == "the database \(path) lacks the table tokens of its schema (version 5): it was altered or damaged; "
                + "restore it from a backup")
        #expect(error?.sql == nil)
        try database.execute("DROP TABLE cards")
        let both = #expect(throws: StorageError.self) { try migrator.migrate(database) }
        #expect(both?.message.contains("lacks the tables cards, tokens of its schema") == true)
    }

    /// A column a recorded migration added that is gone (the version says 5, the column of 5 was dropped) is named
    /// at the start too: the node said it was ready and then failed its calls with INTERNAL ("no such column"). A
    /// column of the node's own beside the migrations' is no concern of the check.
    @Test func aDatabaseWithoutAColumnOfItsSchemaIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let migrator = try Migrator(Self.migrations)
        #expect(try migrator.schema()["cards"] == ["id", "reference", "status"])
        let database = try Database.open(path: path)
        try migrator.migrate(database)
        try database.execute("ALTER TABLE tokens ADD COLUMN own TEXT")
        #expect(try migrator.migrate(database).isEmpty)
        try database.execute("ALTER TABLE cards DROP COLUMN status")
        let error = #expect(throws: StorageError.self) { try migrator.migrate(database) }
        #expect(error?.code == .schema)
        #expect(
            error?.message
                == "the database \(path) lacks the column cards.status of its schema (version 5): it was altered or "
                + "damaged; restore it from a backup")
        try database.execute("ALTER TABLE cards DROP COLUMN reference")
        let both = #expect(throws: StorageError.self) { try migrator.migrate(database) }
        #expect(both?.message.contains("lacks the columns cards.reference, cards.status of its schema") == true)
    }

    @Test func migratedSchemaSurvivesReopeningAFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        try Migrator(Self.migrations).migrate(try Database.open(path: path))
        let reopened = try Database.open(path: path)
        #expect(try Migrator(Self.migrations).migrate(reopened).isEmpty)
        #expect(try Migrator(Self.migrations).currentVersion(of: reopened) == 5)
    }
}

/// What SQLite's "unable to open database file" hides: the system's reason, with what to do for the usual ones.
@Suite struct StorageSystemCauseTests {
    @Test func theSystemsReasonIsAddedToOpenAndIOFailures() {
        #expect(StorageError.systemCause(14, 0) == "")
        #expect(StorageError.systemCause(1, 13) == "")
        #expect(
            StorageError.systemCause(14, 24).hasSuffix("(errno 24): the process is out of file descriptors (ulimit -n)")
        )
        #expect(StorageError.systemCause(14, 13).contains("(errno 13): check the owner and mode of the file"))
        #expect(StorageError.systemCause(10 | (13 << 8), 5) == "; the system said: Input/output error (errno 5)")
    }
}
