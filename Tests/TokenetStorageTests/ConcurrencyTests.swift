import Testing

@testable import TokenetStorage

@Suite struct ConcurrencyTests {
    @Test func fiftyTasksShareOneDatabase() async throws {
        let directory = try TemporaryDirectory()
        let database = try Database.open(path: directory.path("node.sqlite"))
        try database.executeScript(
            """
            CREATE TABLE events (task INTEGER NOT NULL, step INTEGER NOT NULL, PRIMARY KEY (task, step));
            CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
            INSERT INTO counter VALUES (1, 0);
            """)
        let steps = 20
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    for step in 0..<steps {
                        // Read-modify-write inside one transaction: lost updates would show in the counter.
                        try database.transaction { tx in
                            let value = try tx.queryOne("SELECT value FROM counter WHERE id = 1")!.int(0)
                            try tx.execute("UPDATE counter SET value = ? WHERE id = 1", [value + 1])
                            try tx.execute("INSERT INTO events (task, step) VALUES (?, ?)", [task, step])
                        }
                        _ = try database.query("SELECT count(*) FROM events WHERE task = ?", [task])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try database.queryOne("SELECT value FROM counter")?.int(0) == 50 * steps)
        #expect(try database.queryOne("SELECT count(*) FROM events")?.int(0) == 50 * steps)
        #expect(try database.queryOne("SELECT count(DISTINCT task) FROM events")?.int(0) == 50)
    }
}
