import Foundation

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
/// waits). A device is refused before anything reads it: `/dev/null` holds nothing, and a terminal
/// (`/dev/stdin` in an interactive shell) would have the command wait for typing.
/// Pipes are read by OpenSSL alone (`--key <(…)` in a shell), as reading one here would leave it nothing; an encrypted
/// key in one is caught as OpenSSL reads it (`TLSContext` answers its request for the passphrase).
public enum TLSFileCheck {
    /// A file larger than this is no certificate or key: reading it would only take time.
    static let sizeLimit = 8 * 1024 * 1024

    /// What is wrong with `path` as a file of `kind`, as a phrase to follow its name ("is empty; give …"), or nil
    /// when nothing is wrong that can be seen without OpenSSL.
    public static func problem(with path: String, holding kind: TLSFileKind) -> String? {
        let remedy = "give the PEM file of the \(kind.name)\(kind == .caCertificates ? "s" : "")"
        guard !path.isEmpty else { return "is an empty path; \(remedy)" }
        var status = stat()
        guard stat(path, &status) == 0 else {
            return "cannot be read: \(String(cString: strerror(errno))); \(remedy)"
        }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: return "is a directory, not a file; \(remedy)"
        case S_IFCHR, S_IFBLK: return "is a device, not a file; \(remedy)"
        case S_IFREG: break
        default: return nil
        }
        guard access(path, R_OK) == 0 else { return "cannot be read: \(String(cString: strerror(errno))); \(remedy)" }
        guard status.st_size <= sizeLimit else {
            return "holds \(status.st_size) bytes, far more than a \(kind.name) does; \(remedy)"
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return "cannot be read; \(remedy)"
        }
        let text = String(decoding: data, as: UTF8.self)
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
        return "a \(label.count > 40 ? String(label.prefix(40)) + "…" : label) block"
    }
}
