import TokenetRPC
import TokenetWire

/// A caller for a peer this node was given no address for: every call fails UNAVAILABLE, so the caller's fallback
/// (the stand-in rule) applies.
struct UnreachablePeer: RPCCaller {
    let name: String

    /// Never sent (`callWasNeverSent`), as a call whose channel could not connect.
    private var error: RPCError {
        let message = "no address is configured for the \(name)"
        return RPCError(.unavailable, message, cause: NotConnected(reason: message))
    }

    func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> Response { throw error }

    func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> ResponseStream<Response> { throw error }

    func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions,
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response { throw error }

    func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) { throw error }
}
