import COpenSSL
import Foundation

extension TLSContext {
    /// Checks this context's own certificate as a peer will: that `now` lies within its validity dates and that it
    /// names one `tokenet://ROLE/ID` identity, which it returns. Throws `.configuration` for dates, `.peerIdentity`
    /// for the name.
    ///
    /// A client calls this before connecting: in TLS 1.3 the server checks the client's certificate only after the
    /// client's handshake has finished, so a refusal arrives as a terse alert at the first read; checked here, the
    /// reason names the file and the date.
    public func checkOwnCertificate(at now: Date = Date()) throws(TransportError) -> PeerIdentity {
        let name = configuration.certificateChainFile.map { "certificate \($0)" } ?? "the certificate"
        // get0: the context keeps ownership; nothing to free.
        guard let certificate = SSL_CTX_get0_certificate(pointer) else {
            throw TransportError(.configuration, "no certificate is configured")
        }
        // Each with what to do next: the dates alone left a person to work out that the fix is a new certificate
        // (or a clock), and how to make one.
        if let notBefore = Self.date(X509_get0_notBefore(certificate)), now < notBefore {
            throw TransportError(
                .configuration,
                "\(name) is not valid before \(Self.text(notBefore)) (now \(Self.text(now))); check this machine's "
                    + "clock, or wait until then")
        }
        if let notAfter = Self.date(X509_get0_notAfter(certificate)), now > notAfter {
            // The directory of the CA, whose key signs the new certificate: run in the certificate's own directory
            // (elsewhere than the CA's), pki init made a new CA there, which --ca then refused.
            func directory(_ file: String) -> String {
                let directory = (file as NSString).deletingLastPathComponent
                return directory.isEmpty ? "." : directory
            }
            let place = directory(configuration.trustedCAFile)
            let elsewhere = configuration.certificateChainFile.map { directory($0) != place } ?? false
            throw TransportError(
                .configuration,
                "\(name) expired on \(Self.text(notAfter)) (now \(Self.text(now))); run 'tokenet pki init \(place)' "
                    + "(or Tools/gen-certs \(place)) again, which makes an expired certificate anew with its names"
                    + (elsewhere ? " in that directory (the CA's), and give the new one" : "")
                    + ", or give a valid one")
        }
        if VerificationState.isCA(certificate) {
            throw TransportError(
                .peerIdentity,
                "\(name) is a CA certificate (basicConstraints CA:TRUE), which every peer refuses as an identity; give "
                    + "the certificate Tools/gen-certs made for this node or user, not the CA's")
        }
        return try PeerIdentity(uriSANs: VerificationState.uriSANs(of: certificate), certificate: name)
    }

    /// Checks this context's own certificate chain as a peer does when this side connects as a client: that it may
    /// be used as a TLS client (clientAuth). Returns nil when it may, else OpenSSL's reason.
    public func ownCertificateClientProblem() -> String? {
        guard let code = ownChainError(purpose: X509_PURPOSE_SSL_CLIENT), code == X509_V_ERR_INVALID_PURPOSE else {
            return nil
        }
        return String(cString: X509_verify_cert_error_string(Int(code)))
    }

    /// Checks this context's own certificate chain against its own trusted CAs, as a peer of the same deployment
    /// does at every handshake; `forServing` also checks that it may serve TLS (serverAuth). Returns nil when it
    /// verifies, else OpenSSL's reason and whether it is about the certificate's purpose.
    ///
    /// Why: a node given a certificate from another Tools/gen-certs run than its --ca (or a leaf as --ca) said
    /// READY, and then every peer refused it with nothing in its own log to say why.
    public func ownCertificateChainProblem(forServing: Bool = false) -> (reason: String, wrongPurpose: Bool)? {
        guard let code = ownChainError(purpose: forServing ? X509_PURPOSE_SSL_SERVER : nil) else { return nil }
        return (String(cString: X509_verify_cert_error_string(Int(code))), code == X509_V_ERR_INVALID_PURPOSE)
    }

    /// OpenSSL's verification error for this context's own chain against its own trusted CAs, checked for
    /// `purpose` when given; nil when it verifies (or there is nothing to check).
    private func ownChainError(purpose: Int32?) -> Int32? {
        guard let certificate = SSL_CTX_get0_certificate(pointer), let store = SSL_CTX_get_cert_store(pointer),
            let context = X509_STORE_CTX_new()
        else { return nil }
        defer { X509_STORE_CTX_free(context) }
        // get0: the chain stays the context's.
        var chain: OpaquePointer?
        _ = SSL_CTX_ctrl(pointer, SSL_CTRL_GET_CHAIN_CERTS, 0, &chain)
        guard X509_STORE_CTX_init(context, store, certificate, chain) == 1 else { return nil }
        if let purpose { _ = X509_STORE_CTX_set_purpose(context, purpose) }
        guard X509_verify_cert(context) != 1 else { return nil }
        return X509_STORE_CTX_get_error(context)
    }

    /// When this side's certificate stops being valid; nil without one, or when OpenSSL cannot read the date.
    public var ownCertificateExpiry: Date? {
        SSL_CTX_get0_certificate(pointer).flatMap { Self.date(X509_get0_notAfter($0)) }
    }

    /// An ASN.1 time as a date; nil when OpenSSL cannot read it (the peer's check will then say why).
    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func text(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }
}
