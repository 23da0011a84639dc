import Foundation
import TokenetRPC
import TokenetTransport

/// What a party's services get from the node runtime: its options, its logger, its data directory, and channels
/// to the peer nodes it knows.
public struct NodeContext: Sendable {
    public let options: NodeOptions
    public let logger: Logger
    /// Where the party keeps its database and keys (created before the services are built).
    public let dataDirectory: String
    /// The loop outgoing connections run on (the same one the node's listener uses).
    public let eventLoop: EventLoop
    /// The channels and background tasks this node runs towards its peers, which it ends when it stops.
    public let outgoing: NodeOutgoing
    /// What the node closes once its calls and background work are over (its database).
    public let resources: NodeResources

    public init(
        options: NodeOptions, logger: Logger, dataDirectory: String, eventLoop: EventLoop,
        outgoing: NodeOutgoing = NodeOutgoing(), resources: NodeResources = NodeResources()
    ) {
        self.options = options
        self.logger = logger
        self.dataDirectory = dataDirectory
        self.eventLoop = eventLoop
        self.outgoing = outgoing
        self.resources = resources
    }

    /// Runs `close` when the node stops, after the drain of its calls and the end of its background tasks: the
    /// place to close the party's database (see `NodeResources`).
    public func closeWhenStopped(_ name: String, _ close: @escaping @Sendable () throws -> Void) {
        resources.closeWhenStopped(name, close)
    }

    /// Runs `body` once the node's connections have ended as it stops (see `NodeResources.whenCallsEnd`): the place
    /// to have the party's database refuse the changes no caller waits for any more (`stoppingRefusal`).
    public func whenCallsEnd(_ body: @escaping @Sendable () -> Void) {
        resources.whenCallsEnd(body)
    }

    /// Why a stopping node's database refuses a change not yet begun.
    public static let stoppingRefusal =
        "the node is stopping and its calls have ended: a change not begun by then is not made"

    /// Runs `body` in the background until the node stops, which cancels it (see `NodeOutgoing`).
    public func runInBackground(_ body: @escaping @Sendable () async -> Void) {
        outgoing.run(body)
    }

    /// How a node's channel to another party spaces its connection attempts while that party cannot be reached: at
    /// most a second apart (1.2 s with jitter). A call whose deadline ends before the next attempt is due fails
    /// without one (gRPC's fail-fast), and with the channel's usual 5 s the TSP's calls to an issuer (a 5 s
    /// deadline, often less in a sandbox's policy) failed so for seconds after the issuer was back, and its
    /// stand-in decided for an issuer that would have answered. A node has one channel per party, so the party
    /// sees at most about one attempt a second from it.
    static let peerBackoff = RPCChannel.Backoff(initial: .milliseconds(100), maximum: .seconds(1))

    /// A reconnecting channel to the peer playing `role`, at the address its flag gives (`--tsp`, `--issuer`,
    /// `--wallet`), presenting this node's own certificate — or over plain TCP with `--plaintext`.
    public func channel(to role: NodeRole) throws(NodeError) -> RPCChannel {
        guard let address = options.peers[role] else {
            throw NodeError(.config, "--\(role.rawValue) is required: this node calls the \(role.nodeName)")
        }
        return try channel(to: role, at: address)
    }

    /// A reconnecting channel to the peer playing `role` at `address` (such as one issuer's `--issuer ID=HOST:PORT`).
    public func channel(to role: NodeRole, at address: HostPort) throws(NodeError) -> RPCChannel {
        let loop = eventLoop
        let timers = options.clientTimers
        let peer = "the \(role.nodeName) at \(address) (--\(role.rawValue))"
        // When the link goes and comes back, once each: between them only each failed call said anything.
        let onLinkChange: @Sendable (RPCChannel.LinkChange) -> Void = { [logger, outgoing, options] change in
            let retrying =
                "calls to it retry with backoff, each for up to "
                + "\(DurationText.describe(RPCChannel.defaultReadinessWait)) within its deadline"
            switch (outgoing.news(change, peer: peer), change) {
            case (.unreachable, .unreachable(let reason, _)):
                let hint = PeerCertificateHint.calling(reason, ca: options.caPath).map { ": \($0)" } ?? ""
                logger.warning(
                    "cannot reach \(peer)\(hint); \(retrying)", ["peer": address.description, "error": reason])
            case (.notYetReachable, .unreachable(let reason, _)):
                logger.info(
                    "\(peer) is not reachable yet (it may still be starting); \(retrying)",
                    ["peer": address.description, "error": reason])
                // Warned of once the start is over if it is still not reached: the channel says nothing more
                // while its attempts fail the same way.
                outgoing.run {
                    guard (try? await Task.sleep(until: outgoing.startEndsAt, clock: .continuous)) != nil,
                        let reason = outgoing.stillUnreachableAfterStart(peer)
                    else { return }
                    logger.warning(
                        "cannot reach \(peer) (not reached since the node started); \(retrying)",
                        ["peer": address.description, "error": reason])
                }
            case (.reachable(let afterStart), .reachable(let failed)):
                logger.info(
                    afterStart ? "reached \(peer)" : "reached \(peer) again",
                    ["peer": address.description, "failed_attempts": String(failed)])
            default:
                break
            }
        }
        if options.plaintext {
            let channel = RPCChannel(
                timers: timers, backoff: Self.peerBackoff, peer: peer, onLinkChange: onLinkChange
            ) {
                try await PlainConnection.connect(host: address.host, port: address.port, on: loop)
            }
            outgoing.track(channel)
            return channel
        }
        guard let certificate = options.certificatePath, let key = options.privateKeyPath, let ca = options.caPath
        else {
            throw NodeError(.config, "calling the \(role.nodeName) over TLS needs --cert, --key and --ca")
        }
        // Only the party this channel is for may answer: a --tsp that points at the issuer by mistake (or at anyone
        // else holding a certificate of the CA) must fail the handshake, not receive the wallet's requests.
        let peerRoles: Set<PeerRole> = PeerRole(rawValue: role.rawValue).map { [$0] } ?? Set(PeerRole.allCases)
        let context: TLSContext
        do {
            context = try TLSContext(
                configuration: .client(
                    certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: ca,
                    acceptedPeerRoles: peerRoles))
        } catch {
            throw NodeError(.config, "cannot load this node's TLS identity", cause: DescribedError(error))
        }
        context.onKeyLogFailure { [logger] in logger.warning($0) }
        let channel = RPCChannel(timers: timers, backoff: Self.peerBackoff, peer: peer, onLinkChange: onLinkChange) {
            try await TLSConnection.connect(host: address.host, port: address.port, context: context, on: loop)
        }
        outgoing.track(channel)
        return channel
    }
}

/// Builds a party's RPC services once the node knows its options; health and reflection are added by the runtime.
public typealias NodeServices = @Sendable (NodeContext) throws(NodeError) -> RPCRouter
