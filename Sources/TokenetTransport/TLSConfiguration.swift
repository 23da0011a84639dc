/// What a `TLSContext` is built from: which side we are, our certificate and key, and whom we trust.
///
/// Defaults are the Tokenet policy: TLS 1.3 only and mutual authentication (the server requires a client
/// certificate signed by the CA; the client verifies the server against the same CA). Both sides require the
/// peer certificate to carry a `tokenet://ROLE/ID` URI SAN with a role in `acceptedPeerRoles`.
public struct TLSConfiguration: Sendable {
    public enum Side: Sendable, Equatable {
        case server
        case client
    }

    public var side: Side
    /// PEM file with our certificate followed by any intermediates. Optional only for clients.
    public var certificateChainFile: String?
    /// PEM file with the private key for `certificateChainFile`.
    public var privateKeyFile: String?
    /// PEM file with the CA certificates that peer certificates must chain to.
    public var trustedCAFile: String
    /// Roles a peer may have; a peer with another role fails the handshake.
    public var acceptedPeerRoles: Set<PeerRole>
    /// What files named above have already been read to hold, by their path. A pipe (`--key <(…)`) can be read
    /// only once, so the CLI reads it itself (`TLSFileCheck.readPipe`) and the context loads these bytes instead of
    /// opening the path again; the path still names the file in messages. Empty for the nodes, which read their
    /// files again and refuse pipes.
    public var contents: [String: [UInt8]] = [:]

    public init(
        side: Side,
        certificateChainFile: String?,
        privateKeyFile: String?,
        trustedCAFile: String,
        acceptedPeerRoles: Set<PeerRole> = Set(PeerRole.allCases)
    ) {
        self.side = side
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.trustedCAFile = trustedCAFile
        self.acceptedPeerRoles = acceptedPeerRoles
    }

    public static func server(
        certificateChainFile: String,
        privateKeyFile: String,
        trustedCAFile: String,
        acceptedPeerRoles: Set<PeerRole> = Set(PeerRole.allCases)
    ) -> TLSConfiguration {
        TLSConfiguration(
            side: .server, certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile,
            trustedCAFile: trustedCAFile, acceptedPeerRoles: acceptedPeerRoles)
    }

    /// A client configuration. Passing no certificate is allowed so that refusal by a server can be tested; a
    /// Tokenet server will reject such a client.
    public static func client(
        certificateChainFile: String?,
        privateKeyFile: String?,
        trustedCAFile: String,
        acceptedPeerRoles: Set<PeerRole> = Set(PeerRole.allCases)
    ) -> TLSConfiguration {
        TLSConfiguration(
            side: .client, certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile,
            trustedCAFile: trustedCAFile, acceptedPeerRoles: acceptedPeerRoles)
    }
}
