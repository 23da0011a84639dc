import Foundation
import Synchronization
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

    /// A read answers while a change on the same `Database` waits for a lock another connection holds (an operator's
    /// `sqlite3` shell, another process): before reads had a connection of their own, it waited behind the change
    /// for up to the busy timeout.
    @Test func aReadDoesNotWaitForAChangeThatWaitsForALock() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let database = try Database.open(path: path, options: .init(busyTimeout: .seconds(20)))
        try database.executeScript("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);")
        let lock = try HeldLock(on: path)
        let changeEnded = DispatchSemaphore(value: 0)
        let changeResult = Mutex<Result<ExecutionResult, any Error>?>(nil)
        Thread {
            let result = Result { try database.execute("INSERT INTO t VALUES (2)") }
            changeResult.withLock { $0 = result }
            changeEnded.signal()
        }.start()
        // The change holds the write connection once its thread is recorded as the holder.
        while database.holder.load(ordering: .relaxed) == 0 { usleep(1_000) }

        let whileWaiting = try database.queryOne("SELECT count(*) FROM t")?.int(0)
        let changeWasStillWaiting = changeResult.withLock { $0 == nil }
        lock.release()
        changeEnded.wait()

        #expect(whileWaiting == 1)
        #expect(changeWasStillWaiting)
        #expect(throws: Never.self) { try changeResult.withLock { try $0?.get() } }
        #expect(try database.queryOne("SELECT count(*) FROM t")?.int(0) == 2)
    }

    /// Once changes are refused (a node stopping), the change under way finishes, those waiting behind it are refused
    /// as soon as they get the connection, without waiting out the lock another process holds, and reads go on.
    @Test func refusedChangesStopWaitingBehindTheOneUnderWay() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("node.sqlite")
        let database = try Database.open(path: path, options: .init(busyTimeout: .seconds(2)))
        try database.executeScript("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);")
        let lock = try HeldLock(on: path)
        let waiters = 4
        let ended = DispatchSemaphore(value: 0)
        let results = Mutex<[Result<ExecutionResult, any Error>]>([])
        for value in 0..<waiters {
            Thread {
                let result = Result { try database.execute("INSERT INTO t VALUES (?)", [value + 10]) }
                results.withLock { $0.append(result) }
                ended.signal()
            }.start()
        }
        // One change holds the write connection and waits out the other process's lock; the others wait for it.
        while database.holder.load(ordering: .relaxed) == 0 { usleep(1_000) }
        database.refuseChanges(because: "stopping (test)")
        for _ in 0..<waiters { ended.wait() }
        lock.release()

        let refused = results.withLock { all in
            all.compactMap { result -> StorageError? in
                if case .failure(let error as StorageError) = result, error.message == "stopping (test)" {
                    return error
                }
                return nil
            }
        }
        // The one under way failed on the lock (busy); the three behind it were refused, not let wait it out too.
        #expect(refused.count == waiters - 1, "\(results.withLock { $0 })")
        #expect(refused.allSatisfy { $0.code == .interrupted })
        #expect(try database.queryOne("SELECT count(*) FROM t")?.int(0) == 1)
        #expect(throws: StorageError.self) { try database.execute("INSERT INTO t VALUES (3)") }
        // Taken again for the node's own last writes (the TSP broker's delivery progress).
        database.acceptChanges()
        #expect(try database.execute("INSERT INTO t VALUES (4)").changes == 1)
    }

    /// Statements that are not plain reads go to the write connection even through `query`.
    @Test func aQueryThatWritesStillWrites() throws {
        let directory = try TemporaryDirectory()
        let database = try Database.open(path: directory.path("node.sqlite"))
        try database.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        let inserted = try database.query("INSERT INTO t (v) VALUES ('a') RETURNING id")
        #expect(try inserted.first?.int(0) == 1)
        let withCTE = try database.query("WITH n(v) AS (VALUES ('b')) INSERT INTO t (v) SELECT v FROM n RETURNING id")
        #expect(try withCTE.first?.int(0) == 2)
        #expect(try database.queryOne("PRAGMA busy_timeout")?.int(0) == 5000)
        #expect(try database.queryOne("SELECT group_concat(v, ',') FROM t")?.get(0, as: String.self) == "a,b")
    }
}
