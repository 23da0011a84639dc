// Commits numbered transactions into a TokenetStorage database until it is killed; the crash-recovery tests
// SIGKILL it at arbitrary moments and check what survived.
//
//   tokenet-storage-crash-helper DATABASE ROWS_PER_TRANSACTION
//
// It stops by itself, with an error, once its parent is gone or after `lifetime` seconds: the tests kill it within
// seconds, and a helper left running by a stalled or killed test run would fill the disk (60 KB per transaction).
//
// Transaction n inserts batch n, ROWS_PER_TRANSACTION items of batch n (blobs of varying size, so a transaction spans
// several pages) and adds the item count to a running total; after COMMIT returns, "n" is written to stdout with
// an unbuffered write. Every number printed is therefore durably committed, and any transaction must be present
// with all its rows or not at all.
import Foundation
import TokenetStorage

/// The schema the crash tests check; shared with nothing else, kept here so the helper is self-contained.
let crashHelperMigrations = [
    Migration(
        version: 1, name: "batches",
        sql: """
            CREATE TABLE batches (id INTEGER PRIMARY KEY, item_count INTEGER NOT NULL) STRICT;
            CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), items INTEGER NOT NULL) STRICT;
            INSERT INTO totals (id, items) VALUES (1, 0);
            """),
    Migration(
        version: 2, name: "items",
        sql: """
            CREATE TABLE items (
                batch INTEGER NOT NULL REFERENCES batches (id),
                position INTEGER NOT NULL,
                payload BLOB NOT NULL,
                PRIMARY KEY (batch, position)
            ) STRICT;
            """),
]

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tokenet-storage-crash-helper: \(message)\n".utf8))
    exit(1)
}

/// The parent when the helper started, read before anything else: a parent that exits at once (a shell that started
/// it in the background) may be gone by the time the database is open.
let parent = getppid()

let arguments = CommandLine.arguments
guard arguments.count == 3, let rowsPerTransaction = Int(arguments[2]), rowsPerTransaction > 0 else {
    fail("usage: tokenet-storage-crash-helper DATABASE ROWS_PER_TRANSACTION")
}

do {
    let database = try Database.open(path: arguments[1])
    try Migrator(crashHelperMigrations).migrate(database)
    var next = try database.queryOne("SELECT coalesce(max(id), 0) + 1 FROM batches")!.int(0)
    var generator = SystemRandomNumberGenerator()
    let lifetime: Double = 120
    let started = Date()
    while true {
        // Reparented (to init, or to a subreaper) once the parent is gone; a parent that is init itself means the
        // one that started the helper was gone before it could be read.
        let current = getppid()
        guard current == parent, current != 1 else { fail("its parent process is gone; stopping") }
        guard Date().timeIntervalSince(started) < lifetime else {
            fail("still running after \(Int(lifetime)) s without being killed (its test must have stalled); stopping")
        }
        let batch = next
        try database.transaction { tx in
            try tx.execute("INSERT INTO batches (id, item_count) VALUES (?, ?)", [batch, rowsPerTransaction])
            for position in 0..<rowsPerTransaction {
                let payload = [UInt8](
                    repeating: UInt8(truncatingIfNeeded: batch),
                    count: .random(
                        in: 1...3000, using: &generator))
                try tx.execute(
                    "INSERT INTO items (batch, position, payload) VALUES (?, ?, ?)", [batch, position, payload])
            }
            try tx.execute("UPDATE totals SET items = items + ? WHERE id = 1", [rowsPerTransaction])
        }
        let line = Array("\(batch)\n".utf8)
        let written = line.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        guard written == line.count else { fail("cannot write to stdout") }
        next += 1
    }
} catch {
    fail("\(error)")
}
