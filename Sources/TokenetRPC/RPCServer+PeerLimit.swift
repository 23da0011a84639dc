import Synchronization
import TokenetTransport

/// A connection refused because its peer already holds the most connections one identity may have.
public struct ConnectionRefusal: Sendable {
    public let peer: PeerIdentity
    /// What the peer was told in its goaway.
    public let reason: String
}

/// The connections one client identity may hold at once.
///
/// A peer with a valid certificate could otherwise open connections until the node ran out of file descriptors,
/// and every other peer would then wait for an accept that cannot happen. The identity is the certificate's, so the
/// limit holds however many addresses the peer connects from; a connection past it is answered with the server's
/// hello and a goaway `TOO_MANY_CONNECTIONS` whose reason the peer's calls report, and is closed. Plaintext
/// connections have no identity and are not counted (plaintext is for local debugging only).
extension RPCServer {
    /// Counts a connection from `peer`; the reason it is refused when `peer` already holds `connectionsPerPeer`.
    func admit(_ peer: PeerIdentity?) -> String? {
        guard let peer, let limit = connectionsPerPeer else { return nil }
        let admitted = peerConnections.withLock { counts -> Bool in
            guard counts[peer, default: 0] < limit else { return false }
            counts[peer, default: 0] += 1
            return true
        }
        guard !admitted else { return nil }
        return "\(peer.uri) already has \(limit) connections open to this node, the most one peer may have; "
            + "make calls on a connection already open, or close some, then retry"
    }

    /// A connection `admit` counted has ended.
    func release(_ peer: PeerIdentity?) {
        guard let peer, connectionsPerPeer != nil else { return }
        peerConnections.withLock { counts in
            let left = counts[peer, default: 1] - 1
            counts[peer] = left > 0 ? left : nil
        }
    }

    /// How many connections `peer` holds now (those past the limit, refused, not counted).
    public func connectionCount(of peer: PeerIdentity) -> Int {
        peerConnections.withLock { $0[peer, default: 0] }
    }
}

extension RPCConnection {
    /// Server: ends the connection before it serves anything, with a goaway `TOO_MANY_CONNECTIONS` and `reason`.
    func refuseAsOneTooMany(reason: String) {
        perform { $0.machine.tooManyConnections(reason: reason) }
    }
}
