import Glibc
import TokenetTransport

/// Fits the per-peer connection limits to the process's file-descriptor limit at start.
///
/// The defaults (64 connections per peer certificate, 64 handshakes per address) assume the usual 1024 descriptors.
/// Under `ulimit -n 64` one peer could hold every descriptor, and others got nothing for 40–50 s (until keepalive or
/// the handshake timeout freed them): the limits meant to keep one peer from taking all of them did not. A limit
/// left at its default is lowered to a quarter of what the node can spare; one given on the command line is kept,
/// with a warning.
public enum DescriptorBudget {
    /// Descriptors the node keeps for itself: its database and its journal files, keys, logs, the event loop, and
    /// the runtime's own (the listener stops accepting short of them, `Socket.reservedDescriptors`).
    public static let reserved = Socket.reservedDescriptors

    /// The fewest connections a peer may hold however low the limit: a node of the sandbox holds more than one to
    /// each of its peers (its calls and its notification stream), and lowered to 1 a wallet could not reach its own
    /// TSP, which refused it hundreds of times a second while saying READY.
    public static let minimumShare = 4

    /// The soft limit on open files, or nil when the system does not say (or sets none).
    public static func openFileLimit() -> Int? {
        AddressSpaceLimit.soft(RLIMIT_NOFILE)
    }

    /// `options` with its connection limits fitted to `limit` descriptors, and the warning to log, if any. Each limit
    /// left at its default is lowered on its own; one given is kept, with a warning when it is too high (a limit given
    /// kept the other's default too, and one address could then take every descriptor with handshakes).
    public static func fit(_ options: NodeOptions, limit: Int?) -> (NodeOptions, warning: String?) {
        guard let limit else { return (options, nil) }
        let share = max(minimumShare, (limit - reserved) / 4)
        let peers = options.peerConnections ?? Int.max
        let handshakes = options.addressHandshakes ?? Int.max
        guard peers > share || handshakes > share else { return (options, nil) }
        var fitted = options
        var lowered: [String] = []
        var keptTooHigh: [String] = []
        if peers > share {
            if options.peerConnectionsGiven {
                keptTooHigh.append("--peer-connections \(options.peerConnections.map(String.init) ?? "0 (no limit)")")
            } else {
                fitted.peerConnections = share
                lowered.append("a peer may hold \(share) connections (not \(NodeOptions.defaultPeerConnections))")
            }
        }
        if handshakes > share {
            if options.addressHandshakesGiven {
                keptTooHigh.append(
                    "--address-handshakes \(options.addressHandshakes.map(String.init) ?? "0 (no limit)")")
            } else {
                fitted.addressHandshakes = share
                lowered.append(
                    "an address may have \(share) handshakes in progress (not \(NodeOptions.defaultAddressHandshakes))")
            }
        }
        var parts: [String] = []
        if !lowered.isEmpty {
            parts.append(
                "too low for the default connection limits: \(lowered.joined(separator: ", and ")), so that one peer "
                    + "cannot take every descriptor; raise the limit for more")
        }
        if !keptTooHigh.isEmpty {
            parts.append(
                "with \(keptTooHigh.joined(separator: " and ")), one peer can take every descriptor and leave the "
                    + "others unserved; raise the limit, or give limits of \(share) or fewer")
        }
        return (fitted, "the file-descriptor limit is \(limit) (ulimit -n): " + parts.joined(separator: "; and "))
    }
}
