import Foundation

/// Reads a small settings file a node looks for (a policy file or `wallet.json` in its data directory, a `--config`
/// file): what stands in the file's place is named when it is no file to read, and the size is bounded.
///
/// `FileManager.fileExists` follows a symbolic link, so one whose target was gone read as no file at all, and the node
/// ran on its defaults with the operator's policy unapplied; Foundation refuses a pipe with "Permission denied", even
/// to root; and a 300 MB file was parsed for over half a minute with nothing logged.
public enum SettingsFile {
    /// The most a settings file may hold: a few hundred bytes in practice.
    public static let maxBytes = 1 << 20

    /// The bytes of `path`, or nil when nothing is there (the defaults apply).
    public static func read(_ path: String, maxBytes: Int = maxBytes) throws(NodeError) -> Data? {
        var link = stat()
        guard lstat(path, &link) == 0 else {
            if errno == ENOENT { return nil }
            throw NodeError(.config, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            let failure = errno
            guard link.st_mode & S_IFMT == S_IFLNK else {
                throw NodeError(.config, "cannot read \(path): \(String(cString: strerror(failure)))")
            }
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
            throw NodeError(
                .config,
                "\(path) is a symbolic link to \(target), which "
                    + "\(failure == ENOENT ? "does not exist" : "cannot be read (\(String(cString: strerror(failure))))"): "
                    + "fix the link or remove it (without the file the defaults apply)")
        }
        let kind: String? =
            switch status.st_mode & S_IFMT {
            case S_IFREG: nil
            case S_IFDIR: "a directory"
            case S_IFIFO: "a pipe"
            case S_IFSOCK: "a socket"
            default: "a device"
            }
        if let kind { throw NodeError(.config, "cannot read \(path): it is \(kind), not a file; give a JSON file") }
        guard status.st_size <= maxBytes else {
            throw NodeError(
                .config, "\(path) holds \(status.st_size) bytes; a settings file holds at most \(maxBytes) bytes")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw NodeError(.config, "cannot read \(path)", cause: DescribedError(error))
        }
    }
}
