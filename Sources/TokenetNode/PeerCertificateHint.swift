/// What a failed TLS handshake with a peer means for the deployment, read from OpenSSL's words: the CA at fault,
/// or the certificate that has expired, on each side.
enum PeerCertificateHint {
    /// OpenSSL's words for a certificate signed by no CA this side trusts.
    static let untrusted = [
        "self-signed certificate in certificate chain", "unable to get local issuer certificate",
        "unable to verify the first certificate", "certificate signature failure",
    ]

    static let renew = "make a new one with Tools/gen-certs (or tokenet pki init) and restart"

    /// A call to the peer failed on a certificate: the peer's refused here, or this node's refused by the peer
    /// (which, in TLS 1.3, this side learns at its first read, as "the server refused this client's certificate").
    static func calling(_ failure: String, ca: String?) -> String? {
        if failure.contains("refused this client's certificate") {
            if failure.contains("certificate expired") {
                return "it refuses this node's certificate (--cert), which has expired: \(renew) this node"
            }
            if failure.lowercased().contains("unknown ca") {
                return "it does not trust the CA of this node's certificate (--cert): both nodes need certificates "
                    + "of one PKI (one Tools/gen-certs or tokenet pki init directory)"
            }
            return "it refuses this node's certificate (--cert)"
        }
        guard failure.contains("peer certificate rejected") else { return nil }
        if failure.contains("certificate has expired") {
            return "its certificate has expired: \(renew) that node"
        }
        guard untrusted.contains(where: failure.contains) else { return nil }
        return "its certificate is not signed by the CA of --ca\(ca.map { " (\($0))" } ?? ""): both nodes need "
            + "certificates of one PKI (one Tools/gen-certs or tokenet pki init directory)"
    }

    /// The peer refused this node's certificate (its CA unknown, or the certificate expired), or this node refused
    /// the peer's.
    static func serving(_ failure: String) -> String? {
        if failure.contains("alert unknown ca") {
            return "the peer does not trust this node's CA: it was given the CA of another PKI (its --ca or --cacert)"
        }
        if failure.contains("alert certificate expired") {
            return "the peer refuses this node's certificate (--cert), which has expired: \(renew) this node"
        }
        if failure.contains("peer certificate rejected"), failure.contains("certificate has expired") {
            return "the peer's certificate has expired: it needs a new one (Tools/gen-certs or tokenet pki init)"
        }
        if failure.contains("peer certificate rejected"), untrusted.contains(where: failure.contains) {
            return "the peer's certificate is not signed by the CA of this node's --ca: it belongs to another PKI"
        }
        // Mutual TLS: a client that presents no certificate (a TLS client without one, a tool given only the CA).
        if failure.contains("peer did not return a certificate") {
            return "the peer presented no certificate: every client needs one of this deployment's CA (a node's "
                + "--cert and --key, the tokenet CLI's --cert and --key or TOKENET_CERT and TOKENET_KEY)"
        }
        return nil
    }
}
