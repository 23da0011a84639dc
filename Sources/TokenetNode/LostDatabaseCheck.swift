import Foundation

/// A database file found empty, or not found, in a data directory that an earlier start used.
///
/// SQLite takes an empty file, or none, for a new database, so a database truncated to 0 bytes (a full disk, a copy
/// cut short, `> tsp.sqlite`) or deleted made the node start as a new, empty one without a word: its tokens, cards and notification queues
/// gone, and nothing in its log to say so. The node still starts (the file may be empty because the very first start
/// stopped before it wrote anything), but it says what it found.
public enum LostDatabaseCheck {
    /// The warning for `database` in `directory`, or nil: only when the file is missing, or holds nothing and neither
    /// does its write-ahead log (where SQLite keeps what it has not yet copied into the file), while `marker`, a file
    /// an earlier start left there, exists.
    public static func warning(directory: String, database: String, marker: String) -> String? {
        let files = FileManager.default
        let path = directory + "/" + database
        let size = Self.size(of: path)
        let found: String
        if size == 0 {
            found = "is empty (0 bytes)"
        } else if size == nil, Self.isMissing(path) {
            found = "is missing"
        } else {
            return nil
        }
        // A write-ahead log beside an empty file holds what SQLite has not yet copied into it; beside no file at all
        // it is what is left of a database deleted while its node ran, which says the data was lost, not kept.
        guard found == "is missing" || (Self.size(of: path + "-wal") ?? 0) == 0,
            let attributes = try? files.attributesOfItem(atPath: directory + "/" + marker)
        else { return nil }
        let since = (attributes[.modificationDate] as? Date).map {
            " (from \($0.formatted(Date.ISO8601FormatStyle())))"
        }
        return "\(path) \(found), though \(marker)\(since ?? "") shows this data directory was used "
            + "before: if the node held data, its database was lost or cut short, and the node starts with an empty "
            + "one. Stop it and restore \(database) from a backup (with its keys), or ignore this if the node never "
            + "finished its first start, or if the file was moved aside on purpose to start empty"
    }

    /// The write-ahead log and shared-memory index of a database that is missing (deleted while its node ran), moved
    /// aside (`NAME-wal.orphaned-SECONDS`) before SQLite creates a new database beside them, which would take the
    /// old log for its own. Returns the names they were moved to.
    public static func setAsideLeftovers(directory: String, database: String) -> [String] {
        let path = directory + "/" + database
        guard isMissing(path) else { return [] }
        let stamp = Int(Date().timeIntervalSince1970)
        var moved: [String] = []
        for suffix in ["-wal", "-shm"] where !isMissing(path + suffix) {
            let target = "\(path)\(suffix).orphaned-\(stamp)"
            if rename(path + suffix, target) == 0 { moved.append(target) }
        }
        return moved
    }

    /// Whether nothing at all is at `path` (a file deleted or moved away): any other failure to look is left to the
    /// database's own opening, which names it.
    private static func isMissing(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) != 0 && errno == ENOENT
    }

    private static func size(of path: String) -> UInt64? {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(status.st_size)
    }
}
