import TokenetRPC

/// What a node listens with.
///
/// Startup and shutdown only need the bound address and a way to stop, so this seam lets the TLS/RPC server replace
/// the placeholder `PlainTCPListener` without touching readiness, signals or the executables.
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

/// The listener a node runs with unless told otherwise: the RPC server over mutual TLS, or — with `--plaintext`,
/// for debugging only — a plain TCP listener that accepts and closes connections (RPC without TLS is not served).
public let defaultNodeListener: NodeListenerFactory = { options, logger throws(NodeError) in
    if options.plaintext {
        return try PlainTCPListener.bind(address: options.listen, logger: logger)
    }
    return try RPCNodeListener.bind(options: options, router: RPCRouter(), logger: logger)
}
