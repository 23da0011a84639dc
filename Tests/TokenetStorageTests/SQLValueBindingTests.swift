import Foundation
import Testing

@testable import TokenetStorage

@Suite struct SQLValueBindingTests {
    /// A table without column types (and no affinity), so values come back exactly as bound.
    private func makeDatabase() throws -> Database {
        let database = try Database.openInMemory()
        try database.execute("CREATE TABLE cells (id INTEGER PRIMARY KEY, value)")
        return database
    }

    private func roundTrip(_ value: SQLValue, in database: Database) throws -> SQLValue {
        let inserted = try database.execute("INSERT INTO cells (value) VALUES (?)", [value])
        let row = try #require(
            try database.queryOne("SELECT value FROM cells WHERE id = ?", [inserted.lastInsertRowID]))
        return try row.value(0)
    }

    @Test(arguments: [
        SQLValue.null, .integer(0), .integer(Int64.min), .integer(Int64.max), .real(-0.5), .real(1e300),
        .real(.infinity), .text(""), .text("plain"), .text("Zürich 東京 🃏 \u{301}e"), .text("a\u{0}b"),
        .blob([]), .blob([0]), .blob([0, 0, 0]), .blob([0, 255, 0, 1]), .blob([UInt8](repeating: 7, count: 100_000)),
    ])
    func everyKindRoundTripsExactly(value: SQLValue) throws {
        let database = try makeDatabase()
        #expect(try roundTrip(value, in: database) == value)
    }

    @Test func storageClassesAreKeptNotCoerced() throws {
        let database = try makeDatabase()
        try database.execute(
            "INSERT INTO cells (id, value) VALUES (1, ?), (2, ?), (3, ?), (4, ?)",
            [
                SQLValue.null, [UInt8](), "", 0,
            ])
        let types = try database.query("SELECT typeof(value) FROM cells ORDER BY id").map { try $0.text(0) }
        #expect(types == ["null", "blob", "text", "integer"])
        #expect(try database.queryOne("SELECT length(value) FROM cells WHERE id = 2")?.int(0) == 0)
    }

    @Test func swiftValuesBindThroughTheirConversions() throws {
        let database = try makeDatabase()
        let note: String? = nil
        let data = Data([0, 1, 2, 0])
        try database.execute(
            "INSERT INTO cells (id, value) VALUES (1, ?), (2, ?), (3, ?), (4, ?), (5, ?), (6, ?)",
            [
                42, Int32(-7), true, 2.5, data, note,
            ])
        let rows = try database.query("SELECT value FROM cells ORDER BY id")
        #expect(try rows[0].int(0) == 42)
        #expect(try rows[1].get(0, as: Int32.self) == -7)
        #expect(try rows[2].bool(0) == true)
        #expect(try rows[3].double(0) == 2.5)
        #expect(try rows[4].data(0) == data)
        #expect(try rows[4].blob(0) == [0, 1, 2, 0])
        #expect(try rows[5].get(0, as: String?.self) == nil)
        #expect(try rows[5].isNull(0))
    }

    @Test func columnsAreReadByNameOrAlias() throws {
        let database = try Database.openInMemory()
        let row = try #require(try database.queryOne("SELECT 7 AS seven, 'x' AS letter, NULL AS absent"))
        #expect(row.columnNames == ["seven", "letter", "absent"])
        #expect(try row.int("seven") == 7)
        #expect(try row.text("letter") == "x")
        #expect(try row.get("absent", as: Int?.self) == nil)
        #expect(try row.get("seven", as: Int?.self) == 7)
    }

    @Test func typeMismatchesAndUnknownColumnsAreErrorsNotCrashes() throws {
        let database = try Database.openInMemory()
        let row = try #require(try database.queryOne("SELECT 'text' AS word, NULL AS absent, 3.5 AS real"))
        #expect(throws: StorageError.self) { try row.int("word") }
        let null = #expect(throws: StorageError.self) { try row.text("absent") }
        #expect(null?.code == .mismatch)
        #expect(null?.message.contains("NULL") == true)
        #expect((try? row.int("real")) == nil)
        let unknown = #expect(throws: StorageError.self) { try row.text("missing") }
        #expect(unknown?.code == .misuse)
        let outOfRange = #expect(throws: StorageError.self) { try row.value(3) }
        #expect(outOfRange?.code == .misuse)
        #expect(throws: StorageError.self) { try row.value(-1) }
    }

    @Test func booleansReadOnlyFromZeroOrOne() throws {
        let database = try Database.openInMemory()
        let row = try #require(try database.queryOne("SELECT 0, 1, 2"))
        #expect(try row.bool(0) == false)
        #expect(try row.bool(1) == true)
        #expect(throws: StorageError.self) { try row.bool(2) }
    }

    @Test func aWrongParameterCountIsRefused() throws {
        let database = try makeDatabase()
        let tooFew = #expect(throws: StorageError.self) {
            try database.execute("INSERT INTO cells (id, value) VALUES (?, ?)", [1])
        }
        #expect(tooFew?.code == .misuse)
        #expect(tooFew?.message.contains("takes 2 parameters but 1") == true)
        #expect(throws: StorageError.self) { try database.query("SELECT 1", [1]) }
        #expect(try database.query("SELECT * FROM cells").isEmpty)
    }

    @Test func executeTakesOneStatementAndScriptsTakeMany() throws {
        let database = try Database.openInMemory()
        let error = #expect(throws: StorageError.self) {
            try database.execute("CREATE TABLE a (x); CREATE TABLE b (x)")
        }
        #expect(error?.code == .misuse)
        #expect(try database.query("SELECT name FROM sqlite_schema").isEmpty)

        let trailingGarbage = #expect(throws: StorageError.self) { try database.execute("SELECT 1; garbage") }
        #expect(trailingGarbage?.code == .misuse)
        let dependent = #expect(throws: StorageError.self) {
            try database.execute("CREATE TABLE c (x); INSERT INTO c VALUES (1)")
        }
        #expect(dependent?.message.contains("more than one statement") == true)
        try database.execute("CREATE TABLE a (x); -- trailing comment\n")
        try database.executeScript("CREATE TABLE b (x); INSERT INTO b VALUES (1); INSERT INTO b VALUES (2); -- end")
        #expect(try database.queryOne("SELECT count(*) FROM b")?.int(0) == 2)
    }

    @Test func executeReportsChangesAndInsertedRowID() throws {
        let database = try makeDatabase()
        let first = try database.execute("INSERT INTO cells (id, value) VALUES (10, 'a'), (11, 'b')")
        #expect(first == ExecutionResult(changes: 2, lastInsertRowID: 11))
        let update = try database.execute("UPDATE cells SET value = 'c' WHERE id >= ?", [10])
        #expect(update.changes == 2)
        let none = try database.execute("UPDATE cells SET value = 'd' WHERE id = 99")
        #expect(none.changes == 0)
        let schema = try database.execute("CREATE TABLE other (x)")
        #expect(schema.changes == 0)
    }

    @Test func statementsAreCachedBySQL() throws {
        let database = try Database.openInMemory(options: .init(statementCacheCapacity: 2))
        #expect(try database.withConnection { $0.cachedStatementCount } == 0)
        for number in 0..<5 { #expect(try database.queryOne("SELECT ?", [number])?.int(0) == number) }
        #expect(try database.withConnection { $0.cachedStatementCount } == 1)
        for number in 0..<5 { _ = try database.query("SELECT ? + \(number)", [number]) }
        #expect(try database.withConnection { $0.cachedStatementCount } == 2)
    }

    @Test func syntaxErrorsCarryTheSQLAndSQLiteMessage() throws {
        let database = try Database.openInMemory()
        let error = #expect(throws: StorageError.self) { try database.query("SELEKT 1") }
        #expect(error?.code == .sql)
        #expect(error?.sql == "SELEKT 1")
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.description.contains("SELEKT 1") == true)
        let missing = #expect(throws: StorageError.self) { try database.query("SELECT * FROM nowhere") }
        #expect(missing?.message.contains("no such table: nowhere") == true)
    }
}
