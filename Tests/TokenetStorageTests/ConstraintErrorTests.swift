import Testing

@testable import TokenetStorage

@Suite struct ConstraintErrorTests {
    private func makeDatabase() throws -> Database {
        let database = try Database.openInMemory()
        try database.executeScript(
            """
            CREATE TABLE cards (id INTEGER PRIMARY KEY, reference TEXT NOT NULL UNIQUE, limit_cents INTEGER
                CHECK (limit_cents >= 0));
            CREATE TABLE tokens (token TEXT PRIMARY KEY, card INTEGER NOT NULL REFERENCES cards (id)) WITHOUT ROWID;
            INSERT INTO cards (id, reference, limit_cents) VALUES (1, 'card-1', 100);
            INSERT INTO tokens (token, card) VALUES ('tok-1', 1);
            """)
        return database
    }

    private func failure(_ sql: String, _ parameters: [any SQLValueConvertible] = []) throws -> StorageError? {
        let database = try makeDatabase()
        return #expect(throws: StorageError.self) { try database.execute(sql, parameters) }
    }

    @Test func uniqueViolationMeansAlreadyExists() throws {
        let error = try failure("INSERT INTO cards (reference) VALUES (?)", ["card-1"])
        #expect(error?.code == .constraint)
        #expect(error?.constraint == .unique)
        #expect(error?.isAlreadyExists == true)
        #expect(error?.extendedResultCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.message.contains("UNIQUE constraint failed: cards.reference") == true)
    }

    @Test func primaryKeyViolationsMeanAlreadyExists() throws {
        let rowid = try failure("INSERT INTO cards (id, reference) VALUES (1, 'other')")
        #expect(rowid?.constraint == .primaryKey)
        #expect(rowid?.isAlreadyExists == true)
        let key = try failure("INSERT INTO tokens (token, card) VALUES ('tok-1', 1)")
        #expect(key?.constraint == .primaryKey)
        #expect(key?.isAlreadyExists == true)
    }

    @Test func foreignKeyViolationIsEnforcedAndMapped() throws {
        let error = try failure("INSERT INTO tokens (token, card) VALUES ('tok-2', 99)")
        #expect(error?.constraint == .foreignKey)
        #expect(error?.isAlreadyExists == false)
        let delete = try failure("DELETE FROM cards WHERE id = 1")
        #expect(delete?.constraint == .foreignKey)
    }

    @Test func notNullAndCheckViolationsAreMapped() throws {
        let notNull = try failure("INSERT INTO cards (reference) VALUES (?)", [SQLValue.null])
        #expect(notNull?.constraint == .notNull)
        let check = try failure("INSERT INTO cards (reference, limit_cents) VALUES ('card-2', -1)")
        #expect(check?.constraint == .check)
        #expect(check?.isAlreadyExists == false)
    }

    @Test func errorsOtherThanConstraintsHaveNoConstraint() throws {
        let error = StorageError(.busy, "database is locked", extendedResultCode: 5)
        #expect(error.constraint == nil)
        #expect(!error.isAlreadyExists)
    }

    @Test func parameterValuesNeverAppearInErrors() throws {
        let secret = "4111111111111111"
        let error = try failure("INSERT INTO cards (id, reference) VALUES (1, ?)", [secret])
        #expect(error?.code == .constraint)
        #expect(error?.description.contains(secret) == false)
    }
}
