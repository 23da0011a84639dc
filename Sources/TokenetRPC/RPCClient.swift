import Foundation
import TokenetWire

/// Per-call options.
public struct CallOptions: Sendable {
    /// How long the caller waits. Inside a handler the remaining deadline of the call being served applies too.
    public var timeout: Duration?
    public var metadata: Metadata

    public init(timeout: Duration? = nil, metadata: Metadata = Metadata()) {
        self.timeout = timeout
        self.metadata = metadata
    }
}

/// Typed calls over one connection.
///
/// Inside a handler, a call inherits the served call's trace id and its remaining deadline, so one flow across
/// three nodes shares one trace id and never outlives its caller.
public final class RPCClient: Sendable {
    let connection: RPCConnection
    private let runner: Task<Void, Never>

    /// Starts a client connection over `stream`; it runs until `close()` or until the peer goes away.
    public init(stream: any ByteStream, settings: ConnectionSettings = .defaults) {
        let connection = RPCConnection(stream: stream, role: .client, settings: settings, handler: nil)
        self.connection = connection
        self.runner = Task { await connection.run() }
    }

    deinit {
        runner.cancel()
    }

    /// Whether new calls can start on this connection.
    public var isUsable: Bool { connection.isUsable }

    /// Closes gracefully: running calls finish, then the connection closes.
    public func close() async {
        connection.beginShutdown()
        await connection.waitUntilClosed()
    }

    // MARK: - Call types

    public func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> Response {
        let call = try open(method.path, options, onlyRequest: try request.serializedData())
        defer { call.timer?.cancel() }
        return try await withCancellation(call.id) {
            try await self.singleResponse(Response.self, call)
        }
    }

    public func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) throws -> ResponseStream<Response> {
        let call = try open(method.path, options, onlyRequest: try request.serializedData())
        return ResponseStream(call: call, connection: connection)
    }

    public func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions = CallOptions(),
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        let call = try open(method.path, options)
        defer { call.timer?.cancel() }
        return try await withCancellation(call.id) {
            try await requests(RequestWriter(id: call.id, connection: self.connection))
            self.connection.endRequests(call.id)
            return try await self.singleResponse(Response.self, call)
        }
    }

    /// Opens a bidirectional call: send with the writer (then `finish()` it), read the responses as they come.
    public func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions = CallOptions()
    ) throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
        let call = try open(method.path, options)
        return (RequestWriter(id: call.id, connection: connection), ResponseStream(call: call, connection: connection))
    }

    // MARK: - Plumbing

    struct OpenCall: Sendable {
        let id: UInt32
        let responses: MessageQueue
        let timer: Task<Void, Never>?
    }

    /// Opens a call; with `onlyRequest` also sends it as the call's one request and ends the requests.
    private func open(_ path: String, _ options: CallOptions, onlyRequest: Data? = nil) throws -> OpenCall {
        var metadata = options.metadata
        let inherited = ServerContext.current
        if metadata.traceID == nil {
            metadata.set(Metadata.traceIDKey, .text(inherited?.traceID ?? Metadata.newTraceID()))
        }
        var timeout = options.timeout
        if let deadline = inherited?.deadline {
            let remaining = deadline - ContinuousClock.now
            timeout = min(timeout ?? remaining, remaining)
        }
        if let timeout, timeout <= .zero {
            throw RPCError(.deadlineExceeded, "the deadline passed before \(path) started")
        }
        let (id, responses) = try connection.openCall(
            method: path, metadata: metadata, timeout: timeout, onlyRequest: onlyRequest)
        let timer = timeout.map { timeout in
            Task { [connection] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                connection.cancelCall(id, code: .deadlineExceeded, reason: "deadline of \(timeout) exceeded")
            }
        }
        return OpenCall(id: id, responses: responses, timer: timer)
    }

    private func withCancellation<T: Sendable>(
        _ id: UInt32,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await withTaskCancellationHandler {
            try await body()
        } onCancel: {
            connection.cancelCall(id, reason: "cancelled by the caller")
        }
    }

    private func singleResponse<Response: ProtoMessage>(_: Response.Type, _ call: OpenCall) async throws -> Response {
        guard let data = try await call.responses.next() else {
            throw RPCError(.internal, "the server ended the call without a response")
        }
        connection.consumed(call.id, byteCount: data.count)
        guard try await call.responses.next() == nil else {
            throw RPCError(.internal, "the server sent more than one response to a single-response call")
        }
        return try decodeResponse(Response.self, data)
    }
}

func decodeResponse<Response: ProtoMessage>(_: Response.Type, _ data: Data) throws -> Response {
    do {
        return try Response(serializedBytes: data)
    } catch let error as WireError {
        throw RPCError(.internal, "the response is not a valid \(Response.protoName): \(error.message)")
    }
}

/// Sends the requests of a client-streaming or bidirectional call.
public struct RequestWriter<Request: ProtoMessage>: Sendable {
    let id: UInt32
    let connection: RPCConnection

    public func send(_ request: Request) throws {
        connection.sendRequest(id, try request.serializedData())
    }

    /// No more requests.
    public func finish() {
        connection.endRequests(id)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCall(id, reason: "cancelled by the caller")
    }
}

/// The responses of a streaming call; ends when the server's status is OK and throws `RPCError` otherwise.
public struct ResponseStream<Response: ProtoMessage>: AsyncSequence, Sendable {
    public typealias Element = Response
    let call: RPCClient.OpenCall
    let connection: RPCConnection

    public struct AsyncIterator: AsyncIteratorProtocol {
        let call: RPCClient.OpenCall
        let connection: RPCConnection

        public mutating func next() async throws -> Response? {
            let (id, connection, responses) = (call.id, connection, call.responses)
            let data = try await withTaskCancellationHandler {
                try await responses.next()
            } onCancel: {
                connection.cancelCall(id, reason: "cancelled by the caller")
            }
            guard let data else {
                call.timer?.cancel()
                return nil
            }
            connection.consumed(id, byteCount: data.count)
            return try decodeResponse(Response.self, data)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(call: call, connection: connection)
    }

    /// Abandons the call.
    public func cancel() {
        connection.cancelCall(call.id, reason: "cancelled by the caller")
    }
}
