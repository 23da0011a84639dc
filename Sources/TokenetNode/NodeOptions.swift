import TokenetRPC
import TokenetTransport

/// The settings a node runs with, after the config file and the command line have been merged.
public struct NodeOptions: Sendable, Equatable {
    /// Where the node accepts connections. Port 0 lets the kernel pick a free port.
    public var listen = HostPort(host: "127.0.0.1", port: 0)
    /// PEM certificate chain presented to peers.
    public var certificatePath: String?
    /// PEM private key matching `certificatePath`.
    public var privateKeyPath: String?
    /// PEM CA bundle used to verify peers.
    public var caPath: String?
    /// Addresses of the other parties this node calls.
    public var peers: [NodeRole: HostPort] = [:]
    /// Where the node keeps its state; nil means `tokenet-data/<node-name>` under the working directory.
    public var dataDirectory: String?
    public var logLevel: LogLevel = .info
    public var logFormat: LogFormat = .text
    /// When set, the node writes `{"node":…,"pid":…,"listen":…}` here once it accepts connections.
    public var readyFile: String?
    /// A JSON file of demo data the node loads into its database at start-up (issuer-node only).
    public var fixturesPath: String?
    /// Turns TLS off. Only for local debugging; the node warns loudly.
    public var plaintext = false
    /// Where plaintext was asked for, as the warning names it: `--plaintext`, or `"plaintext" in node.json`.
    public var plaintextSource = "--plaintext"
    /// The process whose end stops the node (`--parent-pid`): whoever started it, so that the node does not outlive
    /// a launcher that was killed without the chance to stop it.
    public var parentPID: Int? = nil
    /// How long the node's event loop polls after it was busy before it sleeps (`EventLoop.idlePoll`).
    public var idlePollMicroseconds = EventLoop.defaultIdlePollMicroseconds
    /// After this many milliseconds without hearing from a peer, the node pings it (on the connections it serves
    /// and on those it opens); nil turns pings off. A peer that stays silent is how a frozen process or a lost
    /// network shows itself: without pings a node would only find out when a call's deadline passed.
    public var keepaliveMilliseconds: Int? = 30_000
    /// How long a ping may stay unanswered before the node closes the connection and fails its calls UNAVAILABLE.
    public var keepaliveTimeoutMilliseconds = 20_000
    /// The node closes a connection it serves once no call has been open on it this long (goaway IDLE_TIMEOUT);
    /// nil, the default, keeps idle connections open.
    public var idleTimeoutMilliseconds: Int?
    /// How long a peer that connected to this node may take to send its hello; nil (the default) for no limit.
    /// Such a peer holds a descriptor and a slot of its certificate's `peerConnections` while it says nothing, and
    /// keepalive finds it only after `keepaliveMilliseconds` plus `keepaliveTimeoutMilliseconds` (50 s). Off by
    /// default all the same: a client sends its hello once its application takes the new connection, and in a
    /// loaded process (a node at full load, a test suite running a thousand tests) that took over ten seconds,
    /// so that a limit short enough to matter let honest peers go.
    public var helloTimeoutMilliseconds: Int?
    /// How long calls in progress may take to finish once the node is told to stop; then they end UNAVAILABLE and
    /// the node exits. Streams that never end by themselves (subscriptions) end at once, and a call that waits for
    /// a peer which sends nothing more would otherwise keep the node up, so the stop takes at most this long (plus
    /// `RPCNodeListener.closeGrace`). Zero ends every call at once.
    public var drainTimeoutMilliseconds = 10_000
    /// The most connections one peer certificate may hold open to this node at once; nil for no limit. A peer with
    /// a valid certificate could otherwise open connections until the node ran out of file descriptors, and no other
    /// peer would be served; its connections past the limit are refused with a goaway that says why (see
    /// `RPCServer+PeerLimit.swift`). A node needs a handful per peer (its channel, the operator's commands), so the
    /// default leaves room for bursts while a node with the usual 1024 descriptors keeps most of them for others.
    public var peerConnections: Int? = NodeOptions.defaultPeerConnections
    public static let defaultPeerConnections = 64
    /// The most TLS handshakes one source address may have in progress; nil for no limit. Before its handshake a
    /// connection has no identity to count it by, and one that never finishes it holds a descriptor for the
    /// handshake timeout (10 s): a peer opening such connections in a loop would otherwise take them all (see
    /// `HandshakeLimit`). A handshake takes milliseconds, so honest peers never have many under way.
    public var addressHandshakes: Int? = NodeOptions.defaultAddressHandshakes
    public static let defaultAddressHandshakes = 64
    /// Whether `peerConnections` was set (flag or config): a default is fitted to a low file-descriptor limit at
    /// start (`DescriptorBudget`), a value given is kept.
    public var peerConnectionsGiven = false
    /// Whether `addressHandshakes` was set, as `peerConnectionsGiven`.
    public var addressHandshakesGiven = false
    /// The TSP's addresses of particular issuers (`--issuer ID=HOST:PORT`), by the id each registered with; an issuer
    /// without one is called at `peers[.issuer]`.
    public var issuerRoutes: [String: HostPort] = [:]

    public init() {}

    /// The keepalive limits of the connections this node opens.
    public var clientTimers: ConnectionTimers {
        ConnectionTimers(
            keepaliveInterval: keepaliveMilliseconds.map { .milliseconds($0) },
            keepaliveTimeout: .milliseconds(keepaliveTimeoutMilliseconds))
    }

    /// The keepalive, idle and hello limits of the connections this node serves.
    public var serverTimers: ConnectionTimers {
        var timers = clientTimers
        timers.idleTimeout = idleTimeoutMilliseconds.map { .milliseconds($0) }
        timers.helloTimeout = helloTimeoutMilliseconds.map { .milliseconds($0) }
        return timers
    }

    /// The data directory actually used.
    public func resolvedDataDirectory(node: String) -> String {
        dataDirectory ?? "tokenet-data/\(node)"
    }
}

/// What the command line asks a node to do.
public enum NodeCommand: Sendable, Equatable {
    case run(NodeOptions)
    case help
    case version
}
