import Foundation
import TokenetFileModes

#if canImport(Glibc)
    import Glibc
#endif

/// Files holding secrets (private keys, vault keys): created with 0600 permissions from the start, so there is no
/// moment at which another user could read them, and whole or not at all. Each is written to a temporary file beside
/// it, flushed, then moved into place: written in place, a disk that filled up mid-write left a 0-byte key file,
/// and the node refused every later start on it ("holds 0 bytes").
public enum SecretFile {
    static func write(_ bytes: [UInt8], to path: String) throws(CardError) {
        let temporary = try writeTemporary(bytes, beside: path)
        guard rename(temporary, path) == 0 else {
            let error = ioError("cannot move into place", path)
            unlink(temporary)
            throw error
        }
        syncDirectory(of: path)
    }

    /// Creates `path` with `bytes` only if it does not exist; returns false when it already existed. The temporary
    /// file is linked to `path` (which fails if `path` exists), so no other node starting at once can find it half
    /// written, nor can two of them both create it.
    static func createExclusive(_ bytes: [UInt8], at path: String) throws(CardError) -> Bool {
        if access(path, F_OK) == 0 { return false }
        // Only a file that is not there is made: one the process may not look at (a directory it cannot search)
        // was taken for missing, and the refusal to create it read as if the key had never been made.
        guard errno == ENOENT else { throw ioError("cannot look for", path) }
        let temporary = try writeTemporary(bytes, beside: path)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return false }
            throw ioError("cannot create", path)
        }
        syncDirectory(of: path)
        return true
    }

    /// Deletes the secret file at `path` for good: once this returns, a crash does not bring it back (its directory
    /// is flushed). A file already gone is no error.
    public static func remove(_ path: String) throws(CardError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw ioError("cannot delete", path) }
        syncDirectory(of: path)
    }

    /// `bytes` in a new 0600 file next to `path`, flushed; its path. Nothing is left behind when it fails.
    private static func writeTemporary(_ bytes: [UInt8], beside path: String) throws(CardError) -> String {
        removeLeftovers(of: path)
        let temporary = "\(path).tmp.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("cannot create", path) }
        do {
            try writeAll(bytes, to: fd, path: path)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        return temporary
    }

    /// Temporary files of `path` that a process stopped mid-write left (part of a key): removed before a new one.
    private static func removeLeftovers(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".tmp."
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        where name.hasPrefix(prefix) {
            unlink((directory as NSString).appendingPathComponent(name))
        }
    }

    /// Makes the new name durable; a directory that cannot be opened or synced leaves it to the file system.
    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Why a secret file with `mode` is refused (`KeyFileMode`), naming it as `what` ("the vault key file"), or nil
    /// when only its owner can read or change it.
    public static func exposure(mode: UInt32, of path: String, what: String) -> String? {
        guard let exposure = KeyFileMode.exposure(mode: mode) else { return nil }
        return "\(what) \(path) \(exposure.phrase); run \(KeyFileMode.fix(path))"
    }

    /// Why the secret file at `path` is refused, naming it as `what`: for its mode (`exposure(mode:of:what:)`), its
    /// owner or its directory (`KeyFileMode.placement`); nil when only its owner can read or change it, and for a
    /// file that cannot be looked at (reading it says why).
    public static func exposure(of path: String, what: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        // Its mode is a directory's, and "run chmod 600" would not make it a key.
        if (info.st_mode & S_IFMT) == S_IFDIR { return "\(what) \(path) is a directory, not a file" }
        if let problem = exposure(mode: UInt32(info.st_mode), of: path, what: what) { return problem }
        return KeyFileMode.placement(of: path, owner: UInt32(info.st_uid)).map { "\(what) \(path) \($0)" }
    }

    static func read(_ path: String) throws(CardError) -> (bytes: [UInt8], mode: UInt32) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ioError("cannot open", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ioError("cannot inspect", path) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw ioError("cannot read", path)
            }
            if count == 0 { break }
            bytes += buffer.prefix(count)
            guard bytes.count <= 1 << 20 else { throw CardError(.io, "\(path) is too large to be a key file") }
        }
        return (bytes, UInt32(info.st_mode) & 0o777)
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(CardError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ioError("cannot write", path)
            }
            offset += count
        }
        guard fsync(fd) == 0 else { throw ioError("cannot flush", path) }
    }

    private static func ioError(_ action: String, _ path: String) -> CardError {
        let code = errno
        return CardError(.io, "\(action) \(path): \(String(cString: strerror(code))) (errno \(code))")
    }
}
