import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files holding secrets (private keys, vault keys): created with 0600 permissions from the start, so there is no
/// moment at which another user could read them.
enum SecretFile {
    static func write(_ bytes: [UInt8], to path: String) throws(CardError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("cannot create", path) }
        defer { close(fd) }
        // An existing file keeps its mode on O_TRUNC; tighten it too.
        guard fchmod(fd, 0o600) == 0 else { throw ioError("cannot set 0600 permissions on", path) }
        try writeAll(bytes, to: fd, path: path)
    }

    /// Creates `path` with `bytes` only if it does not exist; returns false when it already existed.
    static func createExclusive(_ bytes: [UInt8], at path: String) throws(CardError) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return false }
            throw ioError("cannot create", path)
        }
        defer { close(fd) }
        try writeAll(bytes, to: fd, path: path)
        return true
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
