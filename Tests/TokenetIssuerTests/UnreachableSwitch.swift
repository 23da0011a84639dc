import Synchronization
import TokenetRPC
import TokenetWire

/// A caller that passes calls on to `inner` until switched off, and then fails them with `refusal`: by default as a
/// TSP that cannot be reached does, UNAVAILABLE with the cause that says the call never left
/// (`RPCError.callWasNeverSent`).
final class UnreachableSwitch: RPCCaller {
    let inner: any RPCCaller
    private let refusal: RPCError
    private let unreachable = Mutex(false)

    init(
        _ inner: any RPCCaller,
        refusal: RPCError = RPCError(
            .unavailable, "cannot connect to the tsp-node", cause: NotConnected(reason: "connection refused"))
    ) {
        self.inner = inner
        self.refusal = refusal
    }

    func set(unreachable: Bool) { self.unreachable.withLock { $0 = unreachable } }

    /// The unary calls made through it, by path, in order (refused ones too).
    var unaryCalls: [String] { calls.withLock { $0 } }
    private let calls = Mutex<[String]>([])

    private func check() throws {
        guard unreachable.withLock({ $0 }) else { return }
        throw refusal
    }

    func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> Response {
        calls.withLock { $0.append(method.path) }
        try check()
        return try await inner.unary(method, request, options: options)
    }

    func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, _ request: Request, options: CallOptions
    ) async throws -> ResponseStream<Response> {
        try check()
        return try await inner.serverStreaming(method, request, options: options)
    }

    func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions,
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        try check()
        return try await inner.clientStreaming(method, options: options, requests: requests)
    }

    func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>, options: CallOptions
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
        try check()
        return try await inner.bidirectional(method, options: options)
    }
}
