import COpenSSL
import CTokenetShims
import Glibc

/// Appends NSS key-log lines ("CLIENT_HANDSHAKE_TRAFFIC_SECRET <random> <secret>") to a file.
///
/// The file is opened once in append mode and every line goes out in a single write(2), so lines from
/// connections on different threads or processes do not interleave.
final class KeyLogWriter: Sendable {
    let path: String
    private let fd: Int32

    init(path: String) throws(TransportError) {
        self.path = path
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let err = errno
            throw TransportError(
                .configuration,
                "SSLKEYLOGFILE=\(path) cannot be written (\(String(cString: strerror(err)))): name a file in a "
                    + "directory that exists, or unset SSLKEYLOGFILE")
        }
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    func append(line: UnsafePointer<CChar>) {
        var bytes = Array(UnsafeBufferPointer(start: line, count: strlen(line)).map { UInt8(bitPattern: $0) })
        bytes.append(UInt8(ascii: "\n"))
        // Key logging is a debugging aid; a failed write must not break the connection.
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

/// Called by OpenSSL for every secret of a connection; the context's app data points at its `KeyLogWriter`.
let tokenetKeyLogCallback: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Void = { ssl, line in
    guard let ssl, let line, let context = SSL_get_SSL_CTX(ssl),
        let raw = ctk_ssl_ctx_get_app_data(context)
    else { return }
    Unmanaged<KeyLogWriter>.fromOpaque(raw).takeUnretainedValue().append(line: line)
}
