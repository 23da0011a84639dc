import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

/// Calls one issuer at its address, and only if the node there is the one that registered it
/// (`CallOptions.expectedPeer`). A call that reaches another node is not sent and fails UNAVAILABLE: to the TSP the
/// issuer is unreachable, as with no address at all, so the stand-in decides its digitizations and its one-time
/// codes are not delivered, until the route is fixed.
struct IssuerCaller: RPCCaller {
    let address: any RPCCaller
    let issuerID: String
    let node: PeerIdentity
    /// Whether the address is the issuer's own (`--issuer ID=HOST:PORT`) rather than the one for every issuer.
    let ownRoute: Bool
    let logger: Logger?

    private func options(_ options: CallOptions) -> CallOptions {
        var options = options
        options.expectedPeer = node
        return options
    }

    /// Names the issuer, both nodes and the option to fix, in the error and in the TSP's log.
    private func checked<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RPCError {
            guard let unexpected = error.unexpectedPeer else { throw error }
            let option = ownRoute ? "--issuer \(issuerID)=HOST:PORT" : "--issuer HOST:PORT (every other issuer's)"
            let answering = unexpected.actual?.description ?? "a node without an identity"
            logger?.withTraceID(ServerContext.current?.traceID).warning(
                "the issuer's address leads to another node; nothing was sent and the issuer counts as unreachable",
                [
                    "issuer": issuerID, "registered_node": node.nodeID,
                    "answering_node": unexpected.actual?.nodeID ?? "none", "option": option,
                ])
            throw RPCError(
                .unavailable,
                "issuer \"\(issuerID)\" was not called: its address (tsp-node \(option)) leads to \(answering), "
                    + "not to \(node), the node that registered it",
                cause: unexpected)
        }
    }

    func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> Response {
        try await checked { try await address.unary(method, request, options: self.options(options)) }
    }

    func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> ResponseStream<Response> {
        try await checked { try await address.serverStreaming(method, request, options: self.options(options)) }
    }

    func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions,
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        try await checked {
            try await address.clientStreaming(method, options: self.options(options), requests: requests)
        }
    }

    func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
        try await checked { try await address.bidirectional(method, options: self.options(options)) }
    }
}
