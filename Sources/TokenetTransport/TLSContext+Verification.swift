import COpenSSL
import CTokenetShims

/// Per-connection verification results, shared with OpenSSL's verify callback through the SSL app data.
///
/// The identity check runs inside the handshake (not after it) so that a peer without a Tokenet identity gets a
/// TLS alert and the handshake fails, exactly like a peer with an untrusted certificate.
final class VerificationState {
    let acceptedRoles: Set<PeerRole>
    var identity: PeerIdentity?
    var failure: TransportError?

    init(acceptedRoles: Set<PeerRole>) {
        self.acceptedRoles = acceptedRoles
    }

    /// Checks the leaf certificate; returns false (and records why) when the handshake must fail.
    func verifyLeaf(_ certificate: OpaquePointer) -> Bool {
        do throws(TransportError) {
            if Self.isCA(certificate) {
                throw TransportError(
                    .peerIdentity,
                    "the peer presented a CA certificate (basicConstraints CA:TRUE): one that can sign others is no "
                        + "node's or user's identity; give the peer a certificate made for it (Tools/gen-certs)")
            }
            let identity = try PeerIdentity(uriSANs: Self.uriSANs(of: certificate))
            guard acceptedRoles.contains(identity.role) else {
                let accepted = PeerRole.allCases.filter(acceptedRoles.contains).map(\.rawValue).joined(separator: ", ")
                throw TransportError(
                    .peerIdentity, "peer \(identity) is not accepted here (accepted roles: \(accepted))")
            }
            self.identity = identity
            return true
        } catch {
            failure = error
            return false
        }
    }

    /// Whether `certificate` may sign others (basicConstraints CA:TRUE). The CA signs the deployment's identities;
    /// its own certificate, or one like it, carrying a tokenet:// name was accepted as a node or an operator.
    static func isCA(_ certificate: OpaquePointer) -> Bool {
        X509_get_extension_flags(certificate) & UInt32(EXFLAG_CA) != 0
    }

    static func uriSANs(of certificate: OpaquePointer) -> [String] {
        let count = ctk_x509_uri_san_count(certificate)
        guard count > 0 else { return [] }
        var result: [String] = []
        var buffer = [CChar](repeating: 0, count: 512)
        for index in 0..<count {
            let length = Int(ctk_x509_uri_san(certificate, index, &buffer, Int32(buffer.count)))
            guard length >= 0 else { continue }
            // Overlong URIs are kept truncated; PeerIdentity rejects them by their content.
            let bytes = buffer.prefix(min(length, buffer.count)).map { UInt8(bitPattern: $0) }
            result.append(String(decoding: bytes, as: UTF8.self))
        }
        return result
    }
}

/// OpenSSL verify callback: keeps OpenSSL's chain verdict and adds the Tokenet identity check on the leaf.
let tokenetVerifyCallback: @convention(c) (Int32, OpaquePointer?) -> Int32 = { preverified, store in
    guard let store else { return 0 }
    guard let ssl = ctk_ssl_from_store_ctx(store), let raw = ctk_ssl_get_app_data(ssl) else { return preverified }
    let state = Unmanaged<VerificationState>.fromOpaque(raw).takeUnretainedValue()
    guard preverified == 1 else {
        let reason = String(cString: X509_verify_cert_error_string(Int(X509_STORE_CTX_get_error(store))))
        if state.failure == nil {
            state.failure = TransportError(.handshakeFailed, "peer certificate rejected: \(reason)", isRefusal: true)
        }
        return 0
    }
    guard X509_STORE_CTX_get_error_depth(store) == 0, let leaf = X509_STORE_CTX_get_current_cert(store) else {
        return 1
    }
    guard state.verifyLeaf(leaf) else {
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
        return 0
    }
    return 1
}
