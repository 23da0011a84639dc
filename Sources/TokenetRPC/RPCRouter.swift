import Foundation
import Synchronization
import TokenetTransport
import TokenetWire

/// What a handler knows about the call it serves.
///
/// A value to its users, one reference underneath: it is copied into the task-local, the handler's closure and
/// every call the handler makes, and five fields would cost five retains and releases at each copy.
public struct ServerContext: Sendable {
    private final class Storage: Sendable {
        let method: String
        let metadata: Metadata
        let peer: PeerIdentity?
        let deadline: ContinuousClock.Instant?
        let traceID: String
        /// What the handler added with `addTrailer`, sent with the call's status.
        let trailers = Mutex(Metadata())
        /// The server's message log (`RPCServer`'s `messageLog`), told of each message of the call.
        let messageLog: (@Sendable (MessageRecord) -> Void)?

        init(
            method: String, metadata: Metadata, peer: PeerIdentity?, deadline: ContinuousClock.Instant?,
            traceID: String, messageLog: (@Sendable (MessageRecord) -> Void)?
        ) {
            self.method = method
            self.metadata = metadata
            self.peer = peer
            self.deadline = deadline
            self.traceID = traceID
            self.messageLog = messageLog
        }
    }

    private let storage: Storage

    init(
        method: String, metadata: Metadata, peer: PeerIdentity?, deadline: ContinuousClock.Instant?, traceID: String,
        messageLog: (@Sendable (MessageRecord) -> Void)? = nil
    ) {
        storage = Storage(
            method: method, metadata: metadata, peer: peer, deadline: deadline, traceID: traceID,
            messageLog: messageLog)
    }

    /// Tells the server's message log, if it has one, of a message of this call. Generic, so that without a log
    /// the message is not boxed as `any ProtoMessage` first (an allocation and a copy per message).
    func logMessage<Message: ProtoMessage>(_ direction: MessageRecord.Direction, _ message: Message) {
        guard let log = storage.messageLog else { return }
        log(MessageRecord(method: method, peer: peer, traceID: traceID, direction: direction, message: message))
    }

    /// `/package.Service/Method`.
    public var method: String { storage.method }
    public var metadata: Metadata { storage.metadata }
    /// The caller, from its certificate; nil in plaintext mode.
    public var peer: PeerIdentity? { storage.peer }
    /// When the caller stops waiting; nil for no deadline.
    public var deadline: ContinuousClock.Instant? { storage.deadline }
    /// The flow's trace id: the caller's, or a new one for the first call of a flow.
    public var traceID: String { storage.traceID }

    /// Adds metadata to the call's status (gRPC's trailers), sent whatever the call's outcome: what the caller may
    /// want to know about the call beside its response, such as which rule decided it. Keys are as for request
    /// metadata (lowercase letters, digits, `-`, `_`, `.`; a `-bin` key for bytes); the runtime's `tokenet-` prefix is
    /// refused, as is a text value with a control character, with INTERNAL: a handler's mistake, not the caller's.
    public func addTrailer(_ key: String, _ value: Metadata.Entry) throws(RPCError) {
        let key = key.lowercased()
        guard Metadata.isValidKey(key), !key.hasPrefix(Metadata.reservedPrefix) else {
            throw RPCError(.internal, "the trailer key '\(key)' is not a valid metadata key of the handler's own")
        }
        if case .text(let text) = value,
            text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            throw RPCError(.internal, "the value of the trailer '\(key)' holds a control character")
        }
        storage.trailers.withLock { $0.add(key, value) }
    }

    /// What the handler added with `addTrailer`.
    var trailers: Metadata { storage.trailers.withLock { $0 } }

    /// The context of the call the current task serves. Clients read it to pass the remaining deadline and the trace
    /// id on to the calls a handler makes.
    @TaskLocal public static var current: ServerContext?
}

/// The request messages of a streaming call, decoded as they are read.
public struct RequestStream<Request: ProtoMessage>: AsyncSequence, Sendable {
    public typealias Element = Request
    let call: ServerCall
    let context: ServerContext

    public struct AsyncIterator: AsyncIteratorProtocol {
        let base: MessageQueue
        let call: ServerCall
        let context: ServerContext

        public mutating func next() async throws -> Request? {
            guard let data = try await base.next() else { return nil }
            call.connection.consumed(call.streamID, byteCount: data.count)
            let request = try decodeRequest(Request.self, data)
            context.logMessage(.received, request)
            return request
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: call.requests, call: call, context: context)
    }
}

/// Sends the response messages of a streaming call.
public struct ResponseWriter<Response: ProtoMessage>: Sendable {
    let call: ServerCall
    let context: ServerContext

    /// Sends one response. Throws `CANCELLED` once the call is over (the client cancelled or went away).
    /// Suspends while the client has not granted flow-control window for what was sent before, or while the
    /// connection's outbound buffer is full: a client that stops reading slows its own call down and never makes
    /// the server buffer without bound.
    public func send(_ response: Response) async throws {
        try Task.checkCancellation()
        context.logMessage(.sent, response)
        try await call.send(try response.serializedData())
    }

    /// Sends `response` only if it leaves at once, without waiting for the client's window or for room; false when it
    /// was not sent. For a last word that must not hold the call open (a health watch's NOT_SERVING at shutdown).
    func sendIfRoom(_ response: Response) throws -> Bool {
        let data = try response.serializedData()
        guard call.hasRoom(for: data), call.connection.sendResponse(call.streamID, data) else { return false }
        context.logMessage(.sent, response)
        return true
    }
}

func decodeRequest<Request: ProtoMessage>(_: Request.Type, _ data: Data) throws -> Request {
    do {
        return try Request(serializedBytes: data)
    } catch let error as WireError {
        throw RPCError(.invalidArgument, "the request is not a valid \(Request.protoName): \(error.message)")
    }
}

/// The methods a server serves: each with its handler and the peer roles allowed to call it.
///
/// Handlers are `nonisolated(nonsending)`: they run on the executor of the call's task (the global executor, or
/// the connection's event loop with `handlersOnConnectionLoop`), as a plain nonisolated function would, without the
/// two executor checks per call that entering and leaving a `@concurrent` closure costs.
public struct RPCRouter: Sendable {
    struct Route: Sendable {
        let kind: RPCKind
        /// nil: any peer, including plaintext (debug) clients.
        let allowedRoles: Set<PeerRole>?
        /// A stream that would outlive any drain (a subscription): it ends UNAVAILABLE as soon as the server shuts
        /// down instead of holding the node until the drain period is over.
        var endsAtShutdown = false
        let handle: nonisolated(nonsending) @Sendable (ServerCall, ServerContext) async throws -> Void
    }

    private(set) var routes: [String: Route] = [:]

    public init() {}

    /// The fully-qualified names of the services with at least one method here.
    public var serviceNames: Set<String> {
        Set(routes.keys.compactMap { path in path.split(separator: "/").first.map(String.init) })
    }

    /// Registers a unary handler. `allowedRoles` overrides the roles the `.proto` declares for the method; with
    /// neither, any peer may call.
    public mutating func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        allowedRoles: Set<PeerRole>? = nil,
        _ body: nonisolated(nonsending) @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        routes[method.path] = Route(kind: .unary, allowedRoles: Self.roles(allowedRoles, method)) { call, context in
            let request = try await Self.singleRequest(Request.self, call)
            context.logMessage(.received, request)
            let response = try await body(request, context)
            context.logMessage(.sent, response)
            try call.sendFinal(response)
        }
    }

    /// Registers a server-streaming handler. Its streams end UNAVAILABLE when the server shuts down (see
    /// `Route.endsAtShutdown`), unless `endsAtShutdown` is false: for a handler that ends them itself then. Such a
    /// stream still ends at shutdown while it waits for its request: its handler has not started, so nothing
    /// would end it before the drain period is over.
    public mutating func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        allowedRoles: Set<PeerRole>? = nil,
        endsAtShutdown: Bool = true,
        _ body:
            nonisolated(nonsending) @escaping @Sendable (Request, ResponseWriter<Response>, ServerContext) async throws
            -> Void
    ) {
        routes[method.path] = Route(
            kind: .serverStreaming, allowedRoles: Self.roles(allowedRoles, method), endsAtShutdown: endsAtShutdown
        ) { call, context in
            let request: Request
            if endsAtShutdown {
                request = try await Self.singleRequest(Request.self, call)
            } else {
                // Marked only while the request is awaited; a shutdown that has begun already leaves it unmarked,
                // and the handler then ends the stream itself as soon as its request is in. Unmarked, the request
                // is taken without waiting for the half-close: a client that holds its side open would otherwise
                // keep the stream for the whole drain (seen when the handler started just after the goaway).
                let marked = call.connection.endsAtShutdown(call.streamID)
                request = try await Self.singleRequest(Request.self, call, awaitingEnd: marked)
                if marked { call.connection.keepsThroughShutdown(call.streamID) }
            }
            context.logMessage(.received, request)
            try await body(request, ResponseWriter(call: call, context: context), context)
        }
    }

    public mutating func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        allowedRoles: Set<PeerRole>? = nil,
        _ body:
            nonisolated(nonsending) @escaping @Sendable (RequestStream<Request>, ServerContext) async throws -> Response
    ) {
        routes[method.path] = Route(kind: .clientStreaming, allowedRoles: Self.roles(allowedRoles, method)) {
            call, context in
            let response = try await body(RequestStream(call: call, context: context), context)
            context.logMessage(.sent, response)
            try call.sendFinal(response)
        }
    }

    /// Registers a bidirectional handler; its streams end at shutdown as server-streaming ones do.
    public mutating func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        allowedRoles: Set<PeerRole>? = nil,
        endsAtShutdown: Bool = true,
        _ body:
            nonisolated(nonsending) @escaping @Sendable (
                RequestStream<Request>, ResponseWriter<Response>, ServerContext
            )
            async throws -> Void
    ) {
        routes[method.path] = Route(
            kind: .bidirectionalStreaming, allowedRoles: Self.roles(allowedRoles, method),
            endsAtShutdown: endsAtShutdown
        ) { call, context in
            try await body(
                RequestStream(call: call, context: context), ResponseWriter(call: call, context: context), context)
        }
    }

    /// The roles given at registration, else those the `.proto` declares, else nil for any peer.
    private static func roles<Request, Response>(
        _ given: Set<PeerRole>?,
        _ method: MethodDescriptor<Request, Response>
    ) -> Set<PeerRole>? {
        if let given { return given }
        guard !method.allowedRoles.isEmpty else { return nil }
        return Set(method.allowedRoles.compactMap(PeerRole.init(rawValue:)))
    }

    /// Unary and server-streaming calls carry exactly one request. A client that sends none or several broke the
    /// call protocol (Protos/README.md section 6): INTERNAL, as gRPC answers it, not a bad argument.
    /// The call's one request; with `awaitingEnd`, also checks that no second one follows (waiting for the
    /// half-close).
    nonisolated(nonsending) private static func singleRequest<Request: ProtoMessage>(
        _: Request.Type, _ call: ServerCall, awaitingEnd: Bool = true
    ) async throws
        -> Request
    {
        guard let data = try await call.requests.next() else {
            throw RPCError(.internal, "the call ended without a request message")
        }
        call.connection.consumed(call.streamID, byteCount: data.count, moreExpected: false)
        let request = try decodeRequest(Request.self, data)
        guard awaitingEnd else { return request }
        guard try await call.requests.next() == nil else {
            throw RPCError(.internal, "\(call.method) takes exactly one request message")
        }
        // The caller may have given up while the call waited to be read: a node that was paused (or slow) read the
        // call, its request and its cancel in one go, and the handler then changed a token for a caller that had
        // been told DEADLINE_EXCEEDED. A call cancelled by now is not handled.
        try Task.checkCancellation()
        return request
    }
}
