/// What a node says of a handshake that failed for the peer's PKI, by OpenSSL's words: a peer of another
/// deployment's CA read only "self-signed certificate in certificate chain" on the calling side and "tlsv1 alert
/// unknown ca" on the serving side, where the CLI says which CA to give.
enum PeerCertificateHint {
    /// OpenSSL's words for a certificate signed by no CA this side trusts.
    static let untrusted = [
        "self-signed certificate in certificate chain", "unable to get local issuer certificate",
        "unable to verify the first certificate", "certificate signature failure",
    ]

    /// The calling side refused the peer's certificate as signed by no CA it trusts.
    static func calling(_ failure: String, ca: String?) -> String? {
        guard failure.contains("peer certificate rejected"), untrusted.contains(where: failure.contains) else {
            return nil
        }
        return "its certificate is not signed by the CA of --ca\(ca.map { " (\($0))" } ?? ""): both nodes need "
            + "certificates of one PKI (one Tools/gen-certs or tokenet pki init directory)"
    }

    /// The peer refused this node's certificate as signed by no CA it trusts, or this node refused the peer's.
    static func serving(_ failure: String) -> String? {
        if failure.contains("alert unknown ca") {
            return "the peer does not trust this node's CA: it was given the CA of another PKI (its --ca or --cacert)"
        }
        if failure.contains("peer certificate rejected"), untrusted.contains(where: failure.contains) {
            return "the peer's certificate is not signed by the CA of this node's --ca: it belongs to another PKI"
        }
        return nil
    }
}
