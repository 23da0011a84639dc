import Foundation
import TokenetFileModes

/// What a TLS file must hold, for `TLSFileCheck`.
public enum TLSFileKind: Sendable {
    /// A certificate, maybe followed by its intermediates (`--cert`).
    case certificate
    /// The certificate's private key (`--key`).
    case privateKey
    /// The CA certificates peers must chain to (`--cacert` of the CLI, `--ca` of a node).
    case caCertificates

    /// What the file is, in messages: "private key".
    public var name: String {
        switch self {
        case .certificate: "certificate"
        case .privateKey: "private key"
        case .caCertificates: "CA certificate"
        }
    }
}

/// Says what is wrong with a TLS file before OpenSSL reads it.
///
/// OpenSSL's reasons name neither the file nor the mistake ("error:1E08010C:DECODER routines::unsupported" for a
/// certificate given as the key, "error:0480006C:PEM routines::no start line" for an empty file), so the usual
/// mistakes are told here in words: no such file, a directory, a device, an empty file, no PEM at all, the wrong kind
/// of PEM block, a key encrypted with a passphrase (which OpenSSL asks for on the terminal, when there is one, and
/// waits). Anything but a regular file is refused before anything reads it: `/dev/null` holds nothing, `/dev/zero`
/// never ends, a terminal (`/dev/stdin` in an interactive shell) would have the command wait for typing, and a FIFO
/// that nobody writes to held the command forever in open(2), inside OpenSSL, beyond the reach of any deadline. A node
/// refuses a pipe (`--key <(…)`) with them, since it reads its files more than once; the CLI reads one itself, once and
/// within a bound (`readPipe(_:holding:waitingAtMost:)`), and has what came checked as a file's text is
/// (`problem(withContents:of:holding:)`).
public enum TLSFileCheck {
    /// A file larger than this is no certificate or key (a CA bundle of hundreds of certificates is under 300 KiB):
    /// reading it would only take time and memory.
    static let sizeLimit = 1024 * 1024

    /// What is wrong with `path` as a file of `kind`, as a phrase to follow its name ("is empty; give …"), or nil
    /// when nothing is wrong that can be seen without OpenSSL.
    public static func problem(with path: String, holding kind: TLSFileKind) -> String? {
        let remedy = "give the PEM file of the \(kind.name)\(kind == .caCertificates ? "s" : "")"
        guard !path.isEmpty else { return "is an empty path; \(remedy)" }
        var status = stat()
        guard stat(path, &status) == 0 else {
            return "cannot be read: \(String(cString: strerror(errno))); \(remedy)"
        }
        if let problem = notRegular(status, remedy) { return problem }
        guard access(path, R_OK) == 0 else { return "cannot be read: \(String(cString: strerror(errno))); \(remedy)" }
        guard status.st_size <= sizeLimit else { return tooLarge("\(status.st_size) bytes, more", kind, remedy) }
        switch read(path, kind, remedy) {
        case .success(let bytes):
            if let problem = problem(withContents: bytes, of: path, holding: kind) { return problem }
            return kind == .privateKey ? exposedKey(status, path) : nil
        case .failure(let problem): return problem.text
        }
    }

    /// What is wrong with `bytes`, read from `path`, as a file of `kind`: the checks `problem(with:holding:)` makes of
    /// a regular file's text, for what the CLI read from a pipe (which cannot be read a second time to look at it).
    public static func problem(withContents bytes: [UInt8], of path: String, holding kind: TLSFileKind) -> String? {
        let remedy = "give the PEM file of the \(kind.name)\(kind == .caCertificates ? "s" : "")"
        guard bytes.count <= sizeLimit else { return tooLarge("\(bytes.count) bytes, more", kind, remedy) }
        let text = String(decoding: bytes, as: UTF8.self)
        guard !text.allSatisfy(\.isWhitespace) else { return "is empty; \(remedy)" }
        let labels = beginLabels(in: text)
        guard !labels.isEmpty else {
            return "is not a PEM file (it has no '-----BEGIN' line); \(remedy), such as one Tools/gen-certs writes"
        }
        let keys = labels.filter { $0.hasSuffix("PRIVATE KEY") }
        let certificates = labels.filter { $0 == "CERTIFICATE" || $0 == "TRUSTED CERTIFICATE" }
        switch kind {
        case .privateKey:
            if keys.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
                return encryptedKeyProblem(path)
            }
            guard !keys.isEmpty else {
                return "holds \(describe(labels)), not a private key; give the key file (BEGIN PRIVATE KEY) made with "
                    + "the certificate"
            }
        case .certificate, .caCertificates:
            guard !certificates.isEmpty else {
                return "holds \(describe(labels)), not a certificate; \(remedy) (BEGIN CERTIFICATE)"
            }
        }
        return nil
    }

    /// Why a file of this type is no TLS file, or nil for a regular file.
    private static func notRegular(_ status: stat, _ remedy: String) -> String? {
        switch status.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "is a directory, not a file; \(remedy)"
        case S_IFCHR, S_IFBLK: return "is a device, not a file; \(remedy)"
        case S_IFIFO:
            return "is a pipe (a FIFO, or a shell's <(…)), not a file: it can be read only once, and only while "
                + "something writes to it; \(remedy) itself"
        case S_IFSOCK: return "is a socket, not a file; \(remedy)"
        default: return "is not a regular file; \(remedy)"
        }
    }

    /// Why a private key file is refused for its permissions (`KeyFileMode`), or nil when only its owner (or, for a
    /// file root owns, its group as well, as Debian's `ssl-cert` group reads `/etc/ssl/private`) can read or change
    /// it.
    static func exposedKey(_ status: stat, _ path: String) -> String? {
        guard let exposure = KeyFileMode.exposure(mode: status.st_mode, groupMayRead: status.st_uid == 0) else {
            return KeyFileMode.placement(of: path, owner: UInt32(status.st_uid))
        }
        let why =
            exposure.readable
            ? "whoever can read it can pose as its owner" : "whoever can change it can put their own key in its place"
        return "\(exposure.phrase): \(why); run \(KeyFileMode.fix(path))"
    }

    /// "holds 5000000 bytes, more than the 1 MiB …", or "holds more than the 1 MiB …" for a file still growing.
    private static func tooLarge(_ amount: String, _ kind: TLSFileKind, _ remedy: String) -> String {
        "holds \(amount) than the \(sizeLimit / 1024 / 1024) MiB a \(kind.name) file may hold; \(remedy)"
    }

    /// A problem found while reading, as `problem(with:holding:)` words it.
    private struct Problem: Error {
        let text: String
    }

    /// The file's bytes, read through a descriptor that is checked again: the path may have been replaced since it
    /// was looked at (by a FIFO, whose open(2) would block: it is opened without blocking), and the file may have
    /// grown (reading stops once more than `sizeLimit` bytes have come).
    private static func read(_ path: String, _ kind: TLSFileKind, _ remedy: String) -> Result<[UInt8], Problem> {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(Problem(text: "cannot be read: \(String(cString: strerror(errno))); \(remedy)"))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .failure(Problem(text: "cannot be read: \(String(cString: strerror(errno))); \(remedy)"))
        }
        if let problem = notRegular(status, remedy) { return .failure(Problem(text: problem)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= sizeLimit {
            let got = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if got == 0 { return .success(bytes) }
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(Problem(text: "cannot be read: \(String(cString: strerror(errno))); \(remedy)"))
            }
            bytes += chunk[..<got]
        }
        return .failure(Problem(text: tooLarge("more", kind, remedy)))
    }

    /// What `readPipe(_:holding:waitingAtMost:)` found at a path.
    public enum PipeContents: Sendable, Equatable {
        /// The path is no pipe: it is to be checked, and read, as a file.
        case notAPipe
        /// Everything the pipe held until its writer closed it, with nothing wrong that can be seen without OpenSSL.
        case read([UInt8])
        /// What is wrong, as a phrase to follow the pipe's name, as `problem(with:holding:)` words one.
        case problem(String)
    }

    /// Reads `path` to its end when it is a pipe (a FIFO, a shell's `<(…)`, `/dev/stdin` fed by `|`), for the CLI,
    /// which runs once and so may read a file that can be read only once (a node reads its files again, and keeps
    /// refusing pipes).
    ///
    /// The pipe is opened without blocking, which succeeds with no writer, where a blocking open(2) waited for one
    /// forever. A read then returns 0 both at the end of what a writer wrote and while no writer has come yet: an
    /// empty read ends the pipe only once something came, or once poll(2) has seen a writer hang up; otherwise
    /// poll(2) waits for one, at most `wait` in all, so a FIFO nobody writes to is named instead of holding the
    /// command. What came is held to the size bound and the checks of a file's text.
    public static func readPipe(_ path: String, holding kind: TLSFileKind, waitingAtMost wait: Duration)
        -> PipeContents
    {
        let remedy = "give the PEM file of the \(kind.name)\(kind == .caCertificates ? "s" : "")"
        var status = stat()
        guard !path.isEmpty, stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return .notAPipe }
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return .problem("cannot be read: \(String(cString: strerror(errno))); \(remedy)") }
        defer { close(descriptor) }
        // Replaced since it was looked at: what it is now is checked as a file is.
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else { return .notAPipe }
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: wait)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var writerHungUp = false
        while true {
            let got = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if got > 0 {
                bytes += chunk[..<got]
                guard bytes.count <= sizeLimit else { return .problem(tooLarge("more", kind, remedy)) }
                continue
            }
            if got == 0 && (!bytes.isEmpty || writerHungUp) { break }
            if got < 0 && errno == EINTR { continue }
            if got < 0 && errno != EAGAIN {
                return .problem("cannot be read: \(String(cString: strerror(errno))); \(remedy)")
            }
            // No writer yet (an empty read), or one that has not written yet (EAGAIN).
            let left = clock.now.duration(to: end)
            guard left > .zero else {
                let seconds = wait.components.seconds
                return .problem(
                    bytes.isEmpty
                        ? "is a pipe that nothing wrote to within \(seconds) s; write the \(kind.name) to it, or "
                            + "\(remedy)"
                        : "is a pipe still being written after \(seconds) s (\(bytes.count) bytes came); write the "
                            + "\(kind.name) to it and close it, or \(remedy)")
            }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&waiting, 1, Int32(min(milliseconds, Int64(Int32.max)))) > 0 {
                writerHungUp = writerHungUp || waiting.revents & Int16(POLLHUP) != 0
            }
        }
        if let problem = problem(withContents: bytes, of: path, holding: kind) { return .problem(problem) }
        return .read(bytes)
    }

    /// What is wrong with a key file that asks for a passphrase. A pipe's name (`/dev/fd/63`) is gone once read, so
    /// the command to decrypt it names the key's own file by a placeholder.
    public static func encryptedKeyProblem(_ path: String) -> String {
        var status = stat()
        let isFile = stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        return "is encrypted with a passphrase, which Tokenet does not ask for; give the key unencrypted "
            + "(openssl pkey -in \(isFile ? path : "ENCRYPTED.key") -out KEY.pem writes it so)"
    }

    /// The labels of the `-----BEGIN LABEL-----` lines of `text`, in order.
    static func beginLabels(in text: String) -> [String] {
        var labels: [String] = []
        var rest = text[...]
        while let begin = rest.range(of: "-----BEGIN ") {
            rest = rest[begin.upperBound...]
            guard let end = rest.range(of: "-----") else { break }
            let label = rest[..<end.lowerBound]
            if !label.contains("\n") { labels.append(String(label)) }
            rest = rest[end.upperBound...]
        }
        return labels
    }

    /// "a certificate", "a PUBLIC KEY block".
    private static func describe(_ labels: [String]) -> String {
        guard let label = labels.first else { return "nothing" }
        if label == "CERTIFICATE" { return "a certificate" }
        if label.hasSuffix("PRIVATE KEY") { return "a private key" }
        return "a \(ShownPrefix.shortened(label, scalarLimit: 40)) block"
    }
}
