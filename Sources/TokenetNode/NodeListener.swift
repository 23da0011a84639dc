import TokenetRPC

/// What a node listens with.
///
/// Startup and shutdown only need the bound address and a way to stop, so this seam keeps the RPC server apart from
/// readiness, signals and the executables (and lets tests start a node with a listener of their own).
public protocol NodeListener: Sendable {
    /// The address actually bound; with port 0 in `--listen`, this carries the port the kernel chose.
    var boundAddress: HostPort { get }

    /// Stops accepting, closes the socket, and returns once in-flight work has drained.
    func stop()
}

/// Creates the listener a node runs with.
public typealias NodeListenerFactory =
    @Sendable (_ options: NodeOptions, _ logger: Logger) throws(NodeError) ->
    any NodeListener

/// The listener a node runs with unless told otherwise: the RPC server (health only) over mutual TLS, or — with
/// `--plaintext`, for debugging only — the same server over plain TCP.
public let defaultNodeListener: NodeListenerFactory = { options, logger throws(NodeError) in
    try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: logger)
}
