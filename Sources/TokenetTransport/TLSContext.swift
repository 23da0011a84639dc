import COpenSSL
import CTokenetShims
import Foundation

/// Owns an OpenSSL `SSL_CTX` configured from a `TLSConfiguration`; every `TLSEngine` is created from one.
///
/// An `SSL_CTX` is safe to share between threads once configured, and this class never mutates it afterwards,
/// which is why it may be `@unchecked Sendable`.
public final class TLSContext: @unchecked Sendable {
    public let configuration: TLSConfiguration
    let pointer: OpaquePointer
    /// Present only when SSLKEYLOGFILE was set when the context was created.
    let keyLog: KeyLogWriter?

    /// Builds the context. Reads SSLKEYLOGFILE from the environment: when set, TLS secrets of every connection
    /// made from this context are appended to that file in NSS key-log format (for Wireshark); when unset,
    /// nothing is written anywhere.
    public convenience init(configuration: TLSConfiguration) throws(TransportError) {
        try self.init(configuration: configuration, environment: ProcessInfo.processInfo.environment)
    }

    /// As `init(configuration:)`, with the environment passed in (tests must not mutate the process environment
    /// while other threads read it).
    convenience init(configuration: TLSConfiguration, environment: [String: String]) throws(TransportError) {
        let path = environment["SSLKEYLOGFILE"].flatMap { $0.isEmpty ? nil : $0 }
        try self.init(configuration: configuration, keyLogFile: path)
    }

    /// The key-log file SSLKEYLOGFILE names in `environment` (nil when unset or empty), checked as a context would
    /// open it: a node checks it before it makes anything, where a refused one left a new data directory behind.
    /// Only a regular file (or none yet) is opened to check it: opened and closed here, a pipe's reader got its end
    /// of file and left, and the node's own contexts then found a pipe that nothing reads.
    public static func keyLogFile(in environment: [String: String]) throws(TransportError) -> String? {
        guard let path = environment["SSLKEYLOGFILE"].flatMap({ $0.isEmpty ? nil : $0 }) else { return nil }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG { return path }
        _ = try KeyLogWriter(path: path)
        return path
    }

    /// Builds the context with an explicit key-log file (`nil` disables key logging regardless of environment).
    public init(configuration: TLSConfiguration, keyLogFile: String?) throws(TransportError) {
        self.configuration = configuration
        // Opened before the context: a refused key-log file threw with the context made and `keyLog` not set, so
        // no deinit ran and the context leaked (about 9 KB for each CLI run given an unusable SSLKEYLOGFILE).
        keyLog = try keyLogFile.map { path throws(TransportError) in try KeyLogWriter(path: path) }
        ERR_clear_error()
        let method = configuration.side == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else {
            throw TransportError.openSSL(.configuration, "SSL_CTX_new failed")
        }
        pointer = context
        // From here on, deinit frees the context if configuration fails.
        try configure()
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// `report` is told once when a TLS secret cannot be written to SSLKEYLOGFILE; never without a key log.
    public func onKeyLogFailure(_ report: @escaping @Sendable (String) -> Void) {
        keyLog?.onFailure(report)
    }

    private func configure() throws(TransportError) {
        guard ctk_ssl_ctx_set_tls13_only(pointer) == 1 else {
            throw TransportError.openSSL(.configuration, "cannot restrict the context to TLS 1.3")
        }
        _ = ctk_ssl_ctx_set_mode(pointer, ctk_ssl_mode_partial_write())
        // Session tickets would let a client resume without presenting its certificate to a fresh verify
        // callback; identity must be established on every connection, so resumption is off.
        _ = SSL_CTX_set_num_tickets(pointer, 0)
        _ = ctk_ssl_ctx_disable_session_cache(pointer)

        let config = configuration
        if let chain = config.certificateChainFile {
            if let bytes = config.contents[chain] {
                try Self.check(bytes, of: chain, .certificate)
                guard loadCertificateChain(bytes) else { throw Self.unreadable(chain, .certificate) }
            } else {
                try Self.check(chain, .certificate)
                guard SSL_CTX_use_certificate_chain_file(pointer, chain) == 1 else {
                    throw Self.unreadable(chain, .certificate)
                }
            }
            guard let key = config.privateKeyFile else {
                throw TransportError(.configuration, "certificate chain \(chain) given without a private key file")
            }
            if let bytes = config.contents[key] {
                try Self.check(bytes, of: key, .privateKey)
            } else {
                try Self.check(key, .privateKey)
            }
            guard try loadPrivateKey(key, contents: config.contents[key]) else {
                // OpenSSL checks the key against the certificate as it loads it, and its "cannot load private key"
                // blamed the key alone when the certificate was just as likely the wrong file (a CA's, another
                // party's): name both.
                if ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH {
                    _ = TransportError.drainOpenSSLErrorCodes()
                    // A chain file whose CAs come first (`cat intermediate.pem node.pem`) reads as a key mismatch:
                    // the first certificate is the one the key is checked against.
                    if let first = SSL_CTX_get0_certificate(pointer), X509_check_ca(first) > 0 {
                        throw TransportError(
                            .configuration,
                            "the first certificate in \(chain) is a CA's, so the private key \(key) was checked "
                                + "against it: put the node's own certificate first in \(chain), then the CAs that "
                                + "signed it")
                    }
                    throw TransportError(
                        .configuration,
                        "the private key \(key) does not belong to the certificate \(chain); give the key made with "
                            + "that certificate, or the certificate of that key")
                }
                throw Self.unreadable(key, .privateKey)
            }
            guard SSL_CTX_check_private_key(pointer) == 1 else {
                throw TransportError.openSSL(.configuration, "private key \(key) does not match \(chain)")
            }
        } else if config.side == .server {
            throw TransportError(.configuration, "a server needs a certificate chain and private key")
        }
        if let bytes = config.contents[config.trustedCAFile] {
            try Self.check(bytes, of: config.trustedCAFile, .caCertificates)
            guard loadTrustedCertificates(bytes) else { throw Self.unreadable(config.trustedCAFile, .caCertificates) }
        } else {
            try Self.check(config.trustedCAFile, .caCertificates)
            guard SSL_CTX_load_verify_locations(pointer, config.trustedCAFile, nil) == 1 else {
                throw Self.unreadable(config.trustedCAFile, .caCertificates)
            }
        }
        let mode =
            config.side == .server
            ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
            : SSL_VERIFY_PEER
        SSL_CTX_set_verify(pointer, mode, tokenetVerifyCallback)
        if let keyLog {
            _ = ctk_ssl_ctx_set_app_data(pointer, Unmanaged.passUnretained(keyLog).toOpaque())
            SSL_CTX_set_keylog_callback(pointer, tokenetKeyLogCallback)
        }
    }
}

extension TLSContext {
    /// Loads the private key at `path`, refusing one that asks for a passphrase: `TLSFileCheck` sees that in the file
    /// it read, but OpenSSL reads the file again (replaced in between, it may hold something else), and its default
    /// is to ask for the passphrase on the terminal and wait there. OpenSSL asks this callback instead, which answers
    /// nothing and notes that it was asked. Returns false when OpenSSL could not use the key for another reason.
    /// `contents`, when given, is what the file was read to hold (a pipe, read once), parsed with the same callback.
    fileprivate func loadPrivateKey(_ path: String, contents: [UInt8]?) throws(TransportError) -> Bool {
        var asked = false
        SSL_CTX_set_default_passwd_cb(pointer) { _, _, _, userdata in
            userdata?.storeBytes(of: true, as: Bool.self)
            return -1
        }
        let loaded = withUnsafeMutablePointer(to: &asked) { flag in
            if let contents {
                return Self.withMemoryBIO(contents) { bio in
                    let key = PEM_read_bio_PrivateKey(
                        bio, nil,
                        { _, _, _, userdata in
                            userdata?.storeBytes(of: true, as: Bool.self)
                            return -1
                        }, UnsafeMutableRawPointer(flag))
                    guard let key else { return false }
                    defer { EVP_PKEY_free(key) }
                    // The context takes a reference of its own.
                    return SSL_CTX_use_PrivateKey(pointer, key) == 1
                }
            }
            SSL_CTX_set_default_passwd_cb_userdata(pointer, flag)
            defer { SSL_CTX_set_default_passwd_cb_userdata(pointer, nil) }
            return SSL_CTX_use_PrivateKey_file(pointer, path, SSL_FILETYPE_PEM) == 1
        }
        if !loaded && asked {
            _ = TransportError.drainOpenSSLErrorCodes()
            throw TransportError(.configuration, "private key file \(path) \(TLSFileCheck.encryptedKeyProblem(path))")
        }
        return loaded
    }

    /// The certificate and its intermediates from `contents`, as `SSL_CTX_use_certificate_chain_file` reads them from
    /// a file: the first certificate (which may carry trust settings) is the context's own, the rest its chain.
    fileprivate func loadCertificateChain(_ contents: [UInt8]) -> Bool {
        Self.withMemoryBIO(contents) { bio in
            guard let leaf = PEM_read_bio_X509_AUX(bio, nil, nil, nil) else { return false }
            // The context takes a reference of its own.
            defer { X509_free(leaf) }
            guard SSL_CTX_use_certificate(pointer, leaf) == 1 else { return false }
            while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
                // SSL_CTX_add0_chain_cert (a macro), which keeps the certificate only when it succeeds.
                guard SSL_CTX_ctrl(pointer, SSL_CTRL_CHAIN_CERT, 0, UnsafeMutableRawPointer(intermediate)) == 1 else {
                    X509_free(intermediate)
                    return false
                }
            }
            return Self.endedAtTheLastBlock()
        }
    }

    /// Every certificate in `contents` as one peers may chain to, as `SSL_CTX_load_verify_locations` adds a file's.
    fileprivate func loadTrustedCertificates(_ contents: [UInt8]) -> Bool {
        guard let store = SSL_CTX_get_cert_store(pointer) else { return false }
        return Self.withMemoryBIO(contents) { bio in
            var added = 0
            while let certificate = PEM_read_bio_X509_AUX(bio, nil, nil, nil) {
                // The store takes a reference of its own.
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else { return false }
                added += 1
            }
            return added > 0 && Self.endedAtTheLastBlock()
        }
    }

    /// Whether the PEM reads that stopped a loop stopped for want of another block ("no start line", which is then
    /// cleared, as OpenSSL's own file loaders clear it), not at a damaged one, whose reason stays queued.
    private static func endedAtTheLastBlock() -> Bool {
        let error = ERR_peek_last_error()
        guard ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE else { return false }
        ERR_clear_error()
        return true
    }

    /// `body` given a read-only memory BIO over `contents`, freed after; false when none could be made.
    private static func withMemoryBIO(_ contents: [UInt8], _ body: (OpaquePointer) -> Bool) -> Bool {
        contents.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return false }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    /// Refuses what a pipe held when `TLSFileCheck` finds it unusable, naming the pipe as a file is named.
    fileprivate static func check(_ contents: [UInt8], of path: String, _ kind: TLSFileKind) throws(TransportError) {
        if let problem = TLSFileCheck.problem(withContents: contents, of: path, holding: kind) {
            throw TransportError(.configuration, "\(kind.name) file \(path) \(problem)")
        }
    }

    /// Refuses a file `TLSFileCheck` finds unusable, naming it and what to give instead.
    fileprivate static func check(_ path: String, _ kind: TLSFileKind) throws(TransportError) {
        if let problem = TLSFileCheck.problem(with: path, holding: kind) {
            throw TransportError(.configuration, "\(kind.name) file \(path) \(problem)")
        }
    }

    /// A file that looked right but OpenSSL could not read: its PEM block is damaged (cut short, edited, not
    /// base64). OpenSSL's reason is kept in words, without its error code.
    fileprivate static func unreadable(_ path: String, _ kind: TLSFileKind) -> TransportError {
        let reasons = TransportError.drainOpenSSLErrorCodes().compactMap { code in
            ERR_reason_error_string(code).map { String(cString: $0) }
        }
        let reason = reasons.last.map { " (\($0))" } ?? ""
        // A sound file OpenSSL will not use at its security level (an RSA key under 2048 bits, a SHA-1 signature)
        // was said to be damaged, which sent the operator to copy it again.
        if let last = reasons.last, last.contains("key too small") || last.contains("md too weak") {
            return TransportError(
                .configuration,
                "\(kind.name) file \(path) is too weak for OpenSSL's security level (\(last)): "
                    + (last.contains("md too weak")
                        ? "it is signed with a digest OpenSSL no longer trusts, such as SHA-1"
                        : "its key is too small (RSA keys need 2048 bits at least)")
                    + "; make a new one with Tools/gen-certs")
        }
        return TransportError(
            .configuration,
            "\(kind.name) file \(path) cannot be read as a \(kind.name)\(reason): its PEM block is damaged or cut "
                + "short; give the \(kind.name) file again, as Tools/gen-certs wrote it")
    }
}
