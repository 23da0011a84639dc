import Foundation
import TokenetTransport
import TokenetWire

/// Per-call options.
extension CallOptions {
    /// The options of a call a handler makes while serving another: the served call's time less a fifth of it (at
    /// most a second), kept for the handler's own answer. With the whole of it the two ended at once, and the
    /// caller got a bare DEADLINE_EXCEEDED where the handler could have named the peer that did not answer. No
    /// timeout outside a served call.
    public static var answeringInTime: CallOptions {
        guard let deadline = ServerContext.current?.deadline else { return CallOptions() }
        return CallOptions(timeout: leavingRoomToAnswer(deadline - .now))
    }

    /// `answeringInTime`, and at most `limit`: a handler's call to a party it gives `limit` at most, with room left
    /// in the served call to act on that party's silence (a TSP applying its stand-in rule) and answer. With only
    /// `limit`, a caller whose deadline was shorter ended both at once, and the fallback never ran.
    public static func answeringInTime(atMost limit: Duration) -> CallOptions {
        guard let deadline = ServerContext.current?.deadline else { return CallOptions(timeout: limit) }
        return CallOptions(timeout: min(limit, leavingRoomToAnswer(deadline - .now)))
    }

    /// The part of `remaining` a handler's own call is given (`answeringInTime`).
    public static func leavingRoomToAnswer(_ remaining: Duration) -> Duration {
        remaining - min(.seconds(1), remaining / 5)
    }
}

public struct CallOptions: Sendable {
    /// How long the caller waits. Inside a handler the remaining deadline of the call being served applies too.
    public var timeout: Duration?
    public var metadata: Metadata
    /// The only peer this call may go to. When the connection's peer (from its certificate) is another, or has no
    /// identity (plaintext), the call fails UNAVAILABLE (`UnexpectedPeer` as its cause) before anything of it is
    /// sent. For a caller that reaches several parties of one role at addresses it was given, where the certificate's
    /// role alone cannot tell a wrong address from the right one.
    public var expectedPeer: PeerIdentity? = nil
    /// Called once with the trailers of the server's status when the call ends with one, OK or not (empty when the
    /// server sent none); not called when the call ends on this side (a deadline, a cancel, a lost connection). It
    /// runs on the connection's thread while the connection is locked: it must only record what it is given.
    public var onTrailers: (@Sendable (Metadata) -> Void)? = nil

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
    public convenience init(
        stream: any ByteStream,
        settings: ConnectionSettings = .defaults,
        timers: ConnectionTimers = ConnectionTimers()
    ) {
        self.init(stream: stream, settings: settings, timers: timers, runningOn: nil)
    }

    /// `runningOn` is where the connection's own tasks (its writer, its timers) run: the global executor when nil.
    ///
    /// The stream is read from here on, on its event loop, before those tasks have a thread: a process whose
    /// cooperative pool is busy (a test runner whose few threads wait for commands) still reads the server's hello
    /// and answers its pings. Read only once `run()` got a thread, such a client lost its connection to the server's
    /// keepalive ("no answer to keepalive ping") after 50 s of holding a call it could not send: a call waits for
    /// the server's hello, which nothing read.
    init(
        stream: any ByteStream, settings: ConnectionSettings, timers: ConnectionTimers,
        runningOn executor: (any TaskExecutor)?
    ) {
        let connection = RPCConnection(
            stream: stream,
            role: .client,
            settings: settings,
            timers: timers,
            handler: nil
        )
        connection.startReceivingEarly()
        self.connection = connection
        self.runner = Task(executorPreference: executor) { await connection.run() }
    }

    deinit {
        runner.cancel()
    }

    /// The event loop of the connection's stream, when it has one. A task that prefers it
    /// (`withTaskExecutorPreference(client.executor)`, `Task(executorPreference:)`) runs on the loop thread: its
    /// calls are written and their responses read there, and it resumes in the loop iteration that read the
    /// response, with no thread hop. Such a task must not block (it would stall the connection).
    public var executor: (any TaskExecutor)? { connection.loop }

    /// Whether new calls can start on this connection.
    public var isUsable: Bool { connection.isUsable }

    /// Whether the server's hello has arrived. A connection that failed without it never reached a Tokenet node:
    /// whatever answered left, or sent something else (a TLS port to a plaintext client, an HTTP server, bytes
    /// that are not a frame), and a tool can say so rather than report a call that failed.
    public var peerGreeted: Bool { connection.peerGreeted }

    /// Who the server is, from its certificate; nil in plaintext.
    public var peerIdentity: PeerIdentity? { connection.stream.peerIdentity }

    /// Closes gracefully: running calls finish, then the connection closes.
    public func close() async {
        connection.beginShutdown()
        await connection.waitUntilClosed()
    }

    // MARK: - Call types

    /// Runs on the caller's executor (`nonisolated(nonsending)`): encoding and sending need no hop of their own,
    /// and a caller on the connection's loop stays there.
    nonisolated(nonsending) public func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> Response {
        let call: OpenCall
        do {
            call = try request.withPackable { packable in
                try open(
                    method.path, options, onlyRequest: .packable(packable), callerFlushes: true, unlessFull: true)
            }
        } catch let error as RPCError where error.cause is RPCConnection.NoRoomToOpen {
            call = try await openOnceRoom(method.path, request, options, callerFlushes: true)
        }
        await connection.flushNow()
        return try await withCancellation(call.id) {
            try await self.singleResponse(Response.self, call)
        }
    }

    /// Opens a call with its only request once the connection has room for it: past
    /// `RPCConnection.outboundHighWater` bytes waiting for the peer, the caller waits (within its deadline) instead of
    /// adding its request to them. Off the fast path, which tries once inline: an async function of its own would
    /// allocate a frame on every call.
    nonisolated(nonsending) private func openOnceRoom<Request: ProtoMessage>(
        _ path: String, _ request: Request, _ options: CallOptions, callerFlushes: Bool
    ) async throws -> OpenCall {
        var options = options
        while true {
            options.timeout = try await connection.waitForRoomToOpen(path, timeout: options.timeout)
            do {
                return try request.withPackable { packable in
                    try open(
                        path, options, onlyRequest: .packable(packable), callerFlushes: callerFlushes,
                        unlessFull: true)
                }
            } catch let error as RPCError where error.cause is RPCConnection.NoRoomToOpen {
                continue
            }
        }
    }

    /// Opens a server-streaming call with its request; like a unary call, it waits for room first while the peer
    /// has not read what this side sent.
    nonisolated(nonsending) public func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> ResponseStream<Response> {
        let call: OpenCall
        do {
            call = try request.withPackable { packable in
                try open(method.path, options, onlyRequest: .packable(packable), unlessFull: true)
            }
        } catch let error as RPCError where error.cause is RPCConnection.NoRoomToOpen {
            call = try await openOnceRoom(method.path, request, options, callerFlushes: false)
        }
        return ResponseStream(call: call, connection: connection)
    }

    public func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions = CallOptions(),
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        let call = try open(method.path, options)
        return try await respond(to: call, RequestWriter(id: call.id, connection: connection), requests)
    }

    /// Runs `requests` on `writer`, ends the requests, and returns the call's single response. When `requests`
    /// throws, the call is cancelled before the error goes on: left open, it waited for a half-close that never
    /// came, its handler kept its task and the stream kept one of the server's concurrent-stream slots.
    func respond<Request, Response: ProtoMessage>(
        to call: OpenCall,
        _ writer: RequestWriter<Request>,
        _ requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        try await withCancellation(call.id) {
            do {
                try await requests(writer)
            } catch let error as RPCError where error.cause is CallAlreadyEnded {
                // The server answered before the requests ended: its answer (a status, most often) is the outcome.
                return try await self.singleResponse(Response.self, call)
            } catch {
                writer.cancel()
                throw error
            }
            writer.finish()
            return try await self.singleResponse(Response.self, call)
        }
    }

    /// The single response of a call whose requests are already sent (a client-streaming call opened again).
    func response<Response: ProtoMessage>(_: Response.Type, of call: OpenCall) async throws -> Response {
        try await withCancellation(call.id) { try await self.singleResponse(Response.self, call) }
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
    }

    /// Opens a call: the trace id (inherited inside a handler or a `FlowTrace`, else new), the deadline (the tighter
    /// of the option and the inherited one, which the connection enforces: `RPCConnection+Deadlines.swift`). With
    /// `onlyRequest` it also sends that request and ends the requests, encoding all three opening frames at once;
    /// with `callerFlushes` the caller writes them itself (`flushNow`) instead of waking the writer task.
    func open(
        _ path: String,
        _ options: CallOptions,
        onlyRequest: RPCConnection.OutgoingMessage? = nil,
        callerFlushes: Bool = false,
        unlessFull: Bool = false
    ) throws -> OpenCall {
        // A caller that has given up already gets nothing sent for it: the server would start a handler only to
        // cancel it.
        if Task.isCancelled {
            throw RPCError(
                .cancelled, "the calling task was cancelled before \(path) started",
                cause: NotConnected(reason: "cancelled before the call started"))
        }
        if let expected = options.expectedPeer, peerIdentity != expected {
            let unexpected = UnexpectedPeer(expected: expected, actual: peerIdentity)
            throw RPCError(.unavailable, "\(path) was not sent: \(unexpected)", cause: unexpected)
        }
        var metadata = options.metadata
        let inherited = ServerContext.current
        if metadata.traceID == nil {
            metadata.setTraceID(inherited?.traceID ?? FlowTrace.flow ?? Metadata.newTraceID())
        }
        var timeout = options.timeout
        if let deadline = inherited?.deadline {
            let remaining = deadline - ContinuousClock.now
            timeout = min(timeout ?? remaining, remaining)
        }
        if let timeout, timeout <= .zero {
            throw RPCError(
                .deadlineExceeded, "the deadline passed before \(path) started",
                cause: NotConnected(reason: "the deadline passed before the call started"))
        }
        let (id, responses) = try connection.openCall(
            method: path, metadata: metadata, timeout: timeout, onlyRequest: onlyRequest, callerFlushes: callerFlushes,
            unlessFull: unlessFull, onTrailers: options.onTrailers)
        return OpenCall(id: id, responses: responses)
    }

    /// `body` is `nonisolated(nonsending)` like this function: a plain async closure would run on the generic
    /// executor, and a caller on the connection's loop would pay an executor switch back when it returns.
    nonisolated(nonsending) private func withCancellation<T: Sendable>(
        _ id: UInt32,
        _ body: nonisolated(nonsending) @Sendable () async throws -> T
    ) async throws -> T {
        try await withTaskCancellationHandler {
            try await body()
        } onCancel: {
            connection.cancelCallWhenCancelled(id, reason: "cancelled by the caller")
        }
    }

    /// Runs inside `withCancellation`, whose handler cancels the call and so ends `responses`.
    nonisolated(nonsending) private func singleResponse<Response: ProtoMessage>(
        _: Response.Type, _ call: OpenCall
    ) async throws -> Response {
        guard let data = try await call.responses.nextEndedOnCancel() else {
            throw RPCError(.internal, "the server ended the call without a response")
        }
        connection.consumed(call.id, byteCount: data.count, moreExpected: false)
        guard try await call.responses.nextEndedOnCancel() == nil else {
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
