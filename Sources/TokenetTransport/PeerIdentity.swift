/// The role a Tokenet party plays; it is the host part of the certificate's `tokenet://ROLE/ID` URI SAN.
public enum PeerRole: String, Sendable, CaseIterable, Hashable {
    case tsp
    case issuer
    case wallet
    case `operator`
}

/// Who is on the other end of a TLS connection, taken from the verified peer certificate.
///
/// Identity comes from the URI subject alternative name `tokenet://ROLE/ID` rather than the subject CN so that
/// one certificate can name exactly one party, independent of DNS names used for reaching it.
public struct PeerIdentity: Sendable, Hashable, CustomStringConvertible {
    public static let uriScheme = "tokenet://"
    /// Node identifiers are short, printable tokens: they end up in logs and storage keys.
    static let maximumNodeIDLength = 64

    public let role: PeerRole
    public let nodeID: String

    public init(role: PeerRole, nodeID: String) {
        self.role = role
        self.nodeID = nodeID
    }

    /// Parses `tokenet://ROLE/ID`; throws `.peerIdentity` with the reason otherwise.
    public init(uri: String) throws(TransportError) {
        guard uri.hasPrefix(Self.uriScheme) else {
            throw TransportError(.peerIdentity, "URI \(Self.quoted(uri)) does not start with \(Self.uriScheme)")
        }
        let rest = uri.dropFirst(Self.uriScheme.count)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw TransportError(.peerIdentity, "URI \(Self.quoted(uri)) is not of the form tokenet://ROLE/ID")
        }
        guard let role = PeerRole(rawValue: String(parts[0])) else {
            let known = PeerRole.allCases.map(\.rawValue).joined(separator: ", ")
            throw TransportError(.peerIdentity, "unknown role \(Self.quoted(String(parts[0]))) (known: \(known))")
        }
        let nodeID = String(parts[1])
        guard !nodeID.isEmpty, nodeID.utf8.count <= Self.maximumNodeIDLength,
            nodeID.utf8.allSatisfy(Self.isNodeIDByte)
        else {
            throw TransportError(
                .peerIdentity,
                "node id \(Self.quoted(nodeID)) must be 1-\(Self.maximumNodeIDLength) characters of A-Z a-z 0-9 . _ -"
            )
        }
        self.init(role: role, nodeID: nodeID)
    }

    /// Picks the single `tokenet://` URI among a certificate's URI SANs; other URIs are ignored. `certificate` names
    /// the certificate in messages.
    init(uriSANs: [String], certificate: String = "peer certificate") throws(TransportError) {
        let candidates = uriSANs.filter { $0.hasPrefix(Self.uriScheme) }
        guard let uri = candidates.first else {
            throw TransportError(
                .peerIdentity, "\(certificate) has no tokenet://ROLE/ID URI subject alternative name")
        }
        guard candidates.count == 1 else {
            throw TransportError(
                .peerIdentity, "\(certificate) names \(candidates.count) tokenet identities; need one")
        }
        do {
            try self.init(uri: uri)
        } catch {
            // Which certificate: a node's own --cert, or the peer's; the bare reason left a person to guess.
            throw TransportError(error.code, "\(certificate): \(error.message)")
        }
    }

    public var uri: String { "\(Self.uriScheme)\(role.rawValue)/\(nodeID)" }
    public var description: String { uri }

    private static func isNodeIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Quotes untrusted certificate text for messages, cut short and with control characters escaped.
    private static func quoted(_ text: String) -> String {
        let cut = ShownPrefix.shortened(text, scalarLimit: 80)
        return "\"" + cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : String($0) }.joined() + "\""
    }
}
