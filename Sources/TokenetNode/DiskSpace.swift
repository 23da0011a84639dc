import Glibc

/// How much room the disk holding a node's data directory has left, for a start that failed on it.
///
/// SQLite reports a full disk met while it opens a database as a plain I/O error ("disk I/O error (SQLite result
/// code 4874)": it could not grow its shared-memory file), which sent people looking for a hardware fault. A node
/// that cannot start with next to no room left says that the disk is full.
public enum DiskSpace {
    /// Below this many bytes free a failed start is put down to the full disk: SQLite, the keys and the lock file
    /// need a few pages each.
    public static let nearlyFull: UInt64 = 1 << 20

    /// Bytes that an unprivileged process may still write where `path` is (its nearest existing ancestor when it
    /// does not exist yet); nil when the system cannot tell.
    public static func available(at path: String) -> UInt64? {
        var candidate = path.isEmpty ? "." : path
        while true {
            var figures = statvfs()
            if statvfs(candidate, &figures) == 0 {
                return UInt64(figures.f_bavail) * UInt64(figures.f_frsize)
            }
            guard errno == ENOENT || errno == ENOTDIR else { return nil }
            let parent = Self.parent(of: candidate)
            guard parent != candidate else { return nil }
            candidate = parent
        }
    }

    /// What to add to a failed start's message (or, with `then`, another failed write's) when the data directory's
    /// disk is (nearly) full; nil otherwise.
    public static func fullDiskNote(
        dataDirectory: String, available: UInt64? = nil, then: String = "then start the node again"
    ) -> String? {
        guard let free = available ?? Self.available(at: dataDirectory), free < nearlyFull else { return nil }
        return "the disk that holds the data directory \(dataDirectory) is full (\(describe(free)) left): free "
            + "space on it, \(then)"
    }

    static func describe(_ bytes: UInt64) -> String {
        bytes < 1024 ? "\(bytes) bytes" : "\(bytes / 1024) KiB"
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }
}
