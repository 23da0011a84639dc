import Glibc
import TokenetTransport

/// Fits the per-peer connection limits to the process's file-descriptor limit at start.
///
/// The defaults (64 connections per peer certificate, 64 handshakes per address) assume the usual 1024 descriptors.
/// Under `ulimit -n 64` one peer could hold every descriptor, and others got nothing for 40–50 s (until keepalive or
/// the handshake timeout freed them): the limits meant to keep one peer from taking all of them did not. Defaults
/// are lowered to a quarter of what the node can spare each; values given on the command line are kept, with a
/// warning.
public enum DescriptorBudget {
    /// Descriptors the node keeps for itself: its database and its journal files, keys, logs, the event loop, and
    /// the runtime's own (the listener stops accepting short of them, `Socket.reservedDescriptors`).
    public static let reserved = Socket.reservedDescriptors

    /// The soft limit on open files, or nil when the system does not say (or sets none).
    public static func openFileLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return nil
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// `options` with its connection limits fitted to `limit` descriptors, and the warning to log, if any.
    public static func fit(_ options: NodeOptions, limit: Int?) -> (NodeOptions, warning: String?) {
        guard let limit else { return (options, nil) }
        let share = max(1, (limit - reserved) / 4)
        let peers = options.peerConnections ?? Int.max
        let handshakes = options.addressHandshakes ?? Int.max
        guard peers > share || handshakes > share else { return (options, nil) }
        if options.connectionLimitsGiven {
            return (
                options,
                "the file-descriptor limit is \(limit) (ulimit -n): with --peer-connections "
                    + "\(options.peerConnections.map(String.init) ?? "0 (no limit)") and --address-handshakes "
                    + "\(options.addressHandshakes.map(String.init) ?? "0 (no limit)"), one peer can take every "
                    + "descriptor and leave the others unserved; raise the limit, or give limits of \(share) or fewer"
            )
        }
        var fitted = options
        fitted.peerConnections = min(peers, share)
        fitted.addressHandshakes = min(handshakes, share)
        return (
            fitted,
            "the file-descriptor limit is \(limit) (ulimit -n), too low for the default connection limits: a peer "
                + "may hold \(fitted.peerConnections!) connections and an address \(fitted.addressHandshakes!) "
                + "handshakes in progress (not \(NodeOptions.defaultPeerConnections) and "
                + "\(NodeOptions.defaultAddressHandshakes)), so that one peer cannot take every descriptor; raise the "
                + "limit for more"
        )
    }
}
