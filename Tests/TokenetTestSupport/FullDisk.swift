import TokenetStorage

/// SQLite's own SQLITE_FULL, for tests of what a node does when its disk fills up, without filling a disk: a
/// database held to the size it has fails a write that needs more pages as a full disk fails it.
public enum FullDisk {
    /// Holds `database` to its size now (`max_page_count` cannot go below it, so 1 means "the size it has"), with an
    /// empty table `filler` for `overfill`.
    public static func hold(_ database: Database) throws {
        try database.executeScript("CREATE TABLE IF NOT EXISTS filler (x); PRAGMA max_page_count = 1;")
    }

    /// Lets `database` grow again.
    public static func release(_ database: Database) throws {
        try database.executeScript("PRAGMA max_page_count = 1073741823;")
    }

    /// A write of about 100 KB into `filler`, more than a held database has room for: throws SQLITE_FULL.
    public static func overfill(_ database: Database) throws {
        _ = try database.execute("INSERT INTO filler VALUES (zeroblob(100000))")
    }
}
