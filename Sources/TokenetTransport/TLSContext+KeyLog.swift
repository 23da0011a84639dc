import COpenSSL
import CTokenetShims
import Glibc
import Synchronization

/// Appends NSS key-log lines ("CLIENT_HANDSHAKE_TRAFFIC_SECRET <random> <secret>") to a file.
///
/// The file is opened once in append mode and every line goes out in a single write(2), so lines from
/// connections on different threads or processes do not interleave.
final class KeyLogWriter: Sendable {
    let path: String
    private let fd: Int32
    /// Told once, at the first line that could not be written; nil until the context's owner sets it.
    private let failureReport = Mutex<(@Sendable (String) -> Void)?>(nil)
    private let failed = Atomic<Bool>(false)

    init(path: String) throws(TransportError) {
        self.path = path
        // Non-blocking: the lines are written from the event loop's thread, where a pipe nobody reads (or a reader
        // that stopped) held every connection of the loop, and opening a FIFO with no reader held the start itself.
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            let err = errno
            // ENXIO is also a socket's answer to open() (/dev/stdout on a socket): only a FIFO waits for a reader.
            var info = stat()
            if err == ENXIO, stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
                throw TransportError(
                    .configuration,
                    "SSLKEYLOGFILE=\(path) is a pipe that nothing reads: start its reader (such as Wireshark) first, "
                        + "or unset SSLKEYLOGFILE")
            }
            let advice =
                switch err {
                case ENOENT, ENOTDIR: "name a file in a directory that exists"
                case ENXIO: "a socket cannot be opened by name; name a file, or a pipe whose reader is running"
                default: "name a file this process can write"
                }
            throw TransportError(
                .configuration,
                "SSLKEYLOGFILE=\(path) cannot be written (\(String(cString: strerror(err)))): \(advice), or unset "
                    + "SSLKEYLOGFILE")
        }
        // A file made here is 0600; one that was there may be readable by others, who could then decrypt every
        // connection it logs. A pipe or a device (Wireshark reading a FIFO, /dev/stdout) is the person's choice.
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
            close(fd)
            let mode = String(info.st_mode & 0o777, radix: 8)
            // The file itself, where the path reaches it through links: `SSLKEYLOGFILE=/dev/stdout > out.txt` told
            // to chmod /dev/stdout, which changes the chmod command's own output.
            let file = Self.resolved(path)
            throw TransportError(
                .configuration,
                "SSLKEYLOGFILE=\(path)\(file == path ? "" : " (\(file))") is readable by other users (mode \(mode)), and "
                    + "its TLS secrets decrypt the traffic: run chmod 600 \(file), or name a new file")
        }
        self.fd = fd
    }

    /// `path` with its links followed (`/dev/stdout` to the file it writes to), or `path` when that fails.
    static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    /// `report` is told once when a secret cannot be written (a full disk, /dev/full, a pipe whose reader stopped
    /// reading: the line is dropped rather than the connection held up): the key log then misses
    /// connections, and a capture decrypted with it shows them as opaque records.
    func onFailure(_ report: @escaping @Sendable (String) -> Void) {
        failureReport.withLock { $0 = report }
    }

    deinit {
        close(fd)
    }

    func append(line: UnsafePointer<CChar>) {
        var bytes = Array(UnsafeBufferPointer(start: line, count: strlen(line)).map { UInt8(bitPattern: $0) })
        bytes.append(UInt8(ascii: "\n"))
        // Key logging is a debugging aid; a failed write must not break the connection, but is said once.
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written != bytes.count, !failed.exchange(true, ordering: .relaxed) else { return }
        let error = errno
        let reason =
            written >= 0
            ? "only part of a line was written"
            : error == EAGAIN || error == EWOULDBLOCK
                ? "the pipe is full: its reader is not reading" : String(cString: strerror(error))
        failureReport.withLock { $0 }?(
            "SSLKEYLOGFILE=\(path): a TLS secret could not be written (\(reason)); the key log will not decrypt every "
                + "connection")
    }
}

/// Called by OpenSSL for every secret of a connection; the context's app data points at its `KeyLogWriter`.
let tokenetKeyLogCallback: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Void = { ssl, line in
    guard let ssl, let line, let context = SSL_get_SSL_CTX(ssl),
        let raw = ctk_ssl_ctx_get_app_data(context)
    else { return }
    Unmanaged<KeyLogWriter>.fromOpaque(raw).takeUnretainedValue().append(line: line)
}
