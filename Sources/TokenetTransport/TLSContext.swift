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

    /// Builds the context with an explicit key-log file (`nil` disables key logging regardless of environment).
    public init(configuration: TLSConfiguration, keyLogFile: String?) throws(TransportError) {
        self.configuration = configuration
        ERR_clear_error()
        let method = configuration.side == .server ? TLS_server_method() : TLS_client_method()
        guard let context = SSL_CTX_new(method) else {
            throw TransportError.openSSL(.configuration, "SSL_CTX_new failed")
        }
        pointer = context
        keyLog = try keyLogFile.map { path throws(TransportError) in try KeyLogWriter(path: path) }
        // From here on, deinit frees the context if configuration fails.
        try configure()
    }

    deinit {
        SSL_CTX_free(pointer)
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
            try Self.check(chain, .certificate)
            guard SSL_CTX_use_certificate_chain_file(pointer, chain) == 1 else {
                throw Self.unreadable(chain, .certificate)
            }
            guard let key = config.privateKeyFile else {
                throw TransportError(.configuration, "certificate chain \(chain) given without a private key file")
            }
            try Self.check(key, .privateKey)
            guard try loadPrivateKey(key) else {
                // OpenSSL checks the key against the certificate as it loads it, and its "cannot load private key"
                // blamed the key alone when the certificate was just as likely the wrong file (a CA's, another
                // party's): name both.
                if ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH {
                    _ = TransportError.drainOpenSSLErrorCodes()
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
        try Self.check(config.trustedCAFile, .caCertificates)
        guard SSL_CTX_load_verify_locations(pointer, config.trustedCAFile, nil) == 1 else {
            throw Self.unreadable(config.trustedCAFile, .caCertificates)
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
    fileprivate func loadPrivateKey(_ path: String) throws(TransportError) -> Bool {
        var asked = false
        SSL_CTX_set_default_passwd_cb(pointer) { _, _, _, userdata in
            userdata?.storeBytes(of: true, as: Bool.self)
            return -1
        }
        let loaded = withUnsafeMutablePointer(to: &asked) { flag in
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
        return TransportError(
            .configuration,
            "\(kind.name) file \(path) cannot be read as a \(kind.name)\(reason): its PEM block is damaged or cut "
                + "short; give the \(kind.name) file again, as Tools/gen-certs wrote it")
    }
}
