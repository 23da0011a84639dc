import Foundation
import Synchronization
import TokenetTransport
import TokenetWire

/// One finished call, as the server's log line reports it.
public struct CallRecord: Sendable {
    public let method: String
    public let peer: PeerIdentity?
    public let code: StatusCode
    /// The status message the caller got (empty for OK), as it left.
    public let message: String
    public let duration: Duration
    public let traceID: String
    /// The server ended the call, or refused it, because it is shutting down (a subscription ended at the goaway,
    /// a call that came during the drain): what a stop does, not a failure worth an operator's attention.
    public let endedByShutdown: Bool
}

/// One request or response message of a served call, for the server's message log (a node at `trace`).
public struct MessageRecord: Sendable {
    public enum Direction: Sendable {
        /// A request the caller sent.
        case received
        /// A response this server sent.
        case sent
    }

    public let method: String
    public let peer: PeerIdentity?
    public let traceID: String
    public let direction: Direction
    /// The message, decoded (a request) or before it is encoded (a response): rendering it, as JSON say, is left to
    /// the log, which does so only when it writes the line.
    public let message: any ProtoMessage
}

/// Which calls the call log is told of.
public enum CallLogScope: Sendable {
    /// Every call (a node at `debug`).
    case all
    /// Calls that did not end OK: how an operator learns why a flow failed without the line of every call.
    case failures
}

/// One finished connection, as the server's connection log reports it.
public struct ConnectionRecord: Sendable {
    public let peer: PeerIdentity?
    public let duration: Duration
    /// Why the connection ended when that was a problem (a protocol error, an unanswered keepalive ping, a failed
    /// read or write, an error goaway from the peer); nil when either side closed it cleanly.
    public let problem: String?
}

/// A call that ended INTERNAL because of a failure inside the server, or with another status whose cause is a
/// `ServerFailure`, for the server's error log: the peer only sees a generic message (or the handler's), so this is
/// where the cause must be written down.
public struct CallFailure: Sendable {
    public let method: String
    public let traceID: String
    /// What the peer was told.
    public let status: String
    /// What went wrong: the error the handler threw, or the cause an INTERNAL `RPCError` carried.
    public let cause: String
}

/// Serves a router's methods on any number of connections.
///
/// Each connection runs as one child task of `serve(listener:)`'s task group; `shutdown()` sends every connection a
/// goaway, ends the streams that would never end by themselves (`RPCRouter.Route.endsAtShutdown`), lets the other
/// calls finish and then closes; `endDrain(reason:)` ends what the owner no longer waits for.
///
/// With `handlersOnConnectionLoop`, each call's handler task runs on the event loop of its connection (for TLS and
/// plaintext connections) instead of the global executor: the request is decoded, handled and answered on the
/// thread that read it, and the response goes into the TLS engine and socket in the same loop iteration — no thread
/// hop at all, which on small machines more than halves the latency of a short call. The trade-off is the event
/// loop's: a handler that blocks or computes for long stalls every connection of that loop, so turn it on only for
/// handlers that never block (they may still `await`; suspending frees the loop).
public final class RPCServer: Sendable {
    public let router: RPCRouter
    let settings: ConnectionSettings
    let timers: ConnectionTimers
    let callLog: (@Sendable (CallRecord) -> Void)?
    let callLogScope: CallLogScope
    /// Told of every request and response message of every call; nil (the default) costs one check per message.
    let messageLog: (@Sendable (MessageRecord) -> Void)?
    let connectionLog: (@Sendable (ConnectionRecord) -> Void)?
    /// Called for every call that ends INTERNAL with a cause: an error that is not an `RPCError`, or an INTERNAL
    /// `RPCError` with a `cause`; and for an `RPCError` of any code whose cause is a `ServerFailure`. (A handler that
    /// logs its failure itself throws an `RPCError` without one.)
    let failureLog: (@Sendable (CallFailure) -> Void)?
    let handlersOnConnectionLoop: Bool
    /// Applied to the message of every error status a handler ends with, before it leaves (a node masks what looks
    /// like a card number: a message that echoes what a caller typed may hold one).
    let statusMessageFilter: (@Sendable (String) -> String)?
    let connections = Mutex<[ObjectIdentifier: RPCConnection]>([:])
    private let shuttingDown = Atomic<Bool>(false)
    /// Handlers running now. A connection ends without waiting for the handlers it cancelled (cancelling is
    /// cooperative: a database transaction runs on), so an owner that closes what handlers use (a node closing its
    /// database once the drain is over) waits for this to reach zero first (`waitForHandlers(within:)`).
    private let runningHandlers = RunningHandlers()
    /// The unfinished frames held for all connections together (see `ByteBudget`).
    let inboundBudget = ByteBudget(limit: ByteBudget.defaultLimit)
    /// The requests held for calls that have not ended their requests, for all connections together (see
    /// `RPCConnection+RequestBudget.swift`).
    let requestBudget = ByteBudget(limit: ByteBudget.defaultLimit)
    /// The frames waiting for peers that read nothing, for all connections together (see
    /// `RPCConnection.endIfPeerStoppedReading`).
    let unreadBudget = ByteBudget(limit: ByteBudget.defaultUnreadLimit)
    /// The most connections one client identity may hold at once; nil for no limit (see `RPCServer+PeerLimit.swift`).
    let connectionsPerPeer: Int?
    /// Told of every connection refused for `connectionsPerPeer`.
    let refusalLog: (@Sendable (ConnectionRefusal) -> Void)?
    /// The connections each client identity holds, while `connectionsPerPeer` is set.
    let peerConnections = Mutex<[PeerIdentity: Int]>([:])

    public init(
        router: RPCRouter,
        settings: ConnectionSettings = .defaults,
        timers: ConnectionTimers = ConnectionTimers(),
        callLog: (@Sendable (CallRecord) -> Void)? = nil,
        callLogScope: CallLogScope = .all,
        messageLog: (@Sendable (MessageRecord) -> Void)? = nil,
        connectionLog: (@Sendable (ConnectionRecord) -> Void)? = nil,
        failureLog: (@Sendable (CallFailure) -> Void)? = nil,
        handlersOnConnectionLoop: Bool = false,
        statusMessageFilter: (@Sendable (String) -> String)? = nil,
        connectionsPerPeer: Int? = nil,
        refusalLog: (@Sendable (ConnectionRefusal) -> Void)? = nil
    ) {
        precondition(connectionsPerPeer.map { $0 > 0 } ?? true, "a peer must be allowed a connection")
        self.connectionsPerPeer = connectionsPerPeer
        self.refusalLog = refusalLog
        self.failureLog = failureLog
        self.handlersOnConnectionLoop = handlersOnConnectionLoop
        self.statusMessageFilter = statusMessageFilter
        self.connectionLog = connectionLog
        self.router = router
        self.settings = settings
        self.timers = timers
        self.callLog = callLog
        self.callLogScope = callLogScope
        self.messageLog = messageLog
    }

    /// Serves one connection until it closes.
    public func serve(_ stream: any ByteStream) async {
        // Typed, so the closure runs on its caller's executor: an untyped literal converted to the optional
        // handler would hop to the generic executor and back on every call. No capture list either: with one
        // (`[self]`) the literal is not `nonisolated(nonsending)` but runs on the generic executor (Swift 6.3).
        let handler: RPCConnection.CallHandler = { call in await self.handle(call) }
        let peer = stream.peerIdentity
        var refusals: (@Sendable (WireV1.CallStart?, WireV1.Status) -> Void)?
        if let callLog {
            refusals = { @Sendable start, status in RPCServer.logRefusal(start, status, peer, callLog) }
        }
        let connection = RPCConnection(
            stream: stream, role: .server, settings: settings, timers: timers,
            handlersOnLoop: handlersOnConnectionLoop, inboundBudget: inboundBudget,
            requestBudget: requestBudget, unreadBudget: unreadBudget, handler: handler, refusalHandler: refusals,
            runningHandlers: runningHandlers)
        if let refusal = admit(peer), let peer {
            connection.refuseAsOneTooMany(reason: refusal)
            refusalLog?(ConnectionRefusal(peer: peer, reason: refusal))
            await connection.run()
            return
        }
        defer { release(peer) }
        let key = ObjectIdentifier(connection)
        connections.withLock { $0[key] = connection }
        if shuttingDown.load(ordering: .acquiring) { connection.beginShutdown() }
        let started = ContinuousClock.now
        await connection.run()
        connections.withLock { _ = $0.removeValue(forKey: key) }
        connectionLog?(
            ConnectionRecord(
                peer: stream.peerIdentity, duration: ContinuousClock.now - started, problem: connection.problem))
    }

    /// Accepts connections from `listener` and serves each in a child task, until the listener closes.
    public func serve(listener: TLSListener) async {
        await withDiscardingTaskGroup { group in
            for await connection in listener.connections {
                group.addTask { await self.serve(connection) }
            }
        }
    }

    /// Accepts plaintext (debug) connections from `listener` and serves each in a child task, until the listener
    /// closes. Their callers have no identity, so methods with `allowedRoles` answer them PERMISSION_DENIED.
    public func serve(listener: PlainListener) async {
        await withDiscardingTaskGroup { group in
            for await connection in listener.connections {
                group.addTask { await self.serve(connection) }
            }
        }
    }

    /// Graceful shutdown: no new calls; subscriptions and other endless streams end UNAVAILABLE; running calls
    /// finish; then every connection closes.
    public func shutdown() {
        shuttingDown.store(true, ordering: .releasing)
        for connection in connections.withLock({ Array($0.values) }) {
            connection.beginShutdown()
        }
    }

    /// After `shutdown()`, once the owner has waited long enough: every call still running ends UNAVAILABLE with
    /// `reason` and every connection closes, also one whose peer has stopped reading. Returns how many connections
    /// were still open.
    @discardableResult
    public func endDrain(reason: String) -> Int {
        let open = connections.withLock { Array($0.values) }
        for connection in open {
            connection.endDrain(reason: reason)
        }
        return open.count
    }

    /// Number of open connections.
    public var connectionCount: Int { connections.withLock { $0.count } }

    /// How many call handlers run now, on every connection (see `runningHandlers`).
    public var handlerCount: Int { runningHandlers.count }

    /// Waits until no call handler runs, at most `limit`; false when some still ran then.
    public func waitForHandlers(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while handlerCount > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    // MARK: - One call

    /// A name a peer sent (a method, a service for health, a symbol for reflection; a goaway's reason) as a status
    /// message or a log line may show it: a peer may send a name of megabytes, and a status that echoed it whole
    /// would print as megabytes of error (and past the frame size would not fit in a frame, so the connection, not
    /// the call, would fail).
    ///
    /// Cut where a character starts (cut inside one, its first bytes decoded as U+FFFD, a character the peer never
    /// sent), and never inside a number (`ShownPrefix`).
    static func shown(_ name: String) -> String {
        guard let kept = ShownPrefix.cut(name, utf8Limit: 256) else { return name }
        return kept + "... (\(name.utf8.count) bytes)"
    }

    /// A call answered before any handler started (too many calls at once, a shutdown, a call_start this side
    /// cannot read) has its line in the call log too: the caller was refused, and without it the node's log said
    /// nothing of thousands of RESOURCE_EXHAUSTED answers.
    private static func logRefusal(
        _ start: WireV1.CallStart?, _ status: WireV1.Status, _ peer: PeerIdentity?,
        _ log: @Sendable (CallRecord) -> Void
    ) {
        let traceID = start.flatMap { Metadata(wire: $0.metadata).anyValidTraceID } ?? Metadata.newTraceID()
        log(
            CallRecord(
                method: start.map { shown($0.method) } ?? "(a call_start that could not be read)", peer: peer,
                code: status.code, message: status.message, duration: .zero, traceID: traceID,
                endedByShutdown: status.code == .unavailable))
    }

    nonisolated(nonsending) private func handle(_ call: ServerCall) async {
        // The clock is read only for the call log.
        let started = callLog == nil ? nil : ContinuousClock.now
        // Metadata are checked once per call. With a problem (a malformed trace id among them) they are refused with
        // the call, and the log line gets the caller's trace id if it sent a valid one, else a fresh one; without a problem,
        // a trace id present is valid.
        let checked = call.metadata.checked()
        let metadataProblem: String?
        let traceID: String
        switch checked {
        case .success(let received):
            metadataProblem = nil
            traceID = received ?? Metadata.newTraceID()
        case .failure(let refusal):
            metadataProblem = refusal.message
            traceID = call.metadata.anyValidTraceID ?? Metadata.newTraceID()
        }
        var status = await status(of: call, traceID: traceID, metadataProblem: metadataProblem)
        if status.code != .ok, let statusMessageFilter { status.message = statusMessageFilter(status.message) }
        // The log reports what the caller was told: a call this side ended itself while the handler ran (a message
        // past the window, say) was logged CANCELLED, the handler's view of it.
        let told = await call.finish(status)
        if let callLog, let started, callLogScope == .all || told.code != .ok {
            callLog(
                CallRecord(
                    // Cut short as in statuses: a peer's megabyte method name would make a megabyte log line.
                    method: Self.shown(call.method),
                    peer: call.peer,
                    code: told.code,
                    message: told.message,
                    duration: ContinuousClock.now - started,
                    traceID: traceID,
                    endedByShutdown: told == RPCConnection.streamEndedByShutdown
                )
            )
        }
    }

    nonisolated(nonsending) private func status(
        of call: ServerCall, traceID: String, metadataProblem: String?
    ) async -> WireV1.Status {
        guard let route = router.routes[call.method] else {
            guard !call.method.isEmpty else {
                return WireV1.Status(
                    code: .unimplemented, message: "the call names no method; give one as /package.Service/Method")
            }
            return WireV1.Status(code: .unimplemented, message: "unknown method \(Self.shown(call.method))")
        }
        if let problem = metadataProblem {
            return WireV1.Status(code: .invalidArgument, message: problem)
        }
        if let allowed = route.allowedRoles {
            guard let peer = call.peer else {
                return WireV1.Status(
                    code: .permissionDenied,
                    message: "\(call.method) needs a client certificate (the connection is plaintext)"
                )
            }
            guard allowed.contains(peer.role) else {
                let roles = allowed.map(\.rawValue).sorted().joined(separator: ", ")
                return WireV1.Status(
                    code: .permissionDenied,
                    message: "role \(peer.role.rawValue) may not call \(call.method) (allowed: \(roles))"
                )
            }
        }
        if let deadline = call.deadline, deadline <= ContinuousClock.now {
            // A timeout of zero (or one spent before the handler could start): the caller has stopped waiting, and
            // the handler must not act for it.
            return WireV1.Status(code: .deadlineExceeded, message: "the call's deadline passed before it was handled")
        }
        if route.endsAtShutdown, !call.connection.endsAtShutdown(call.streamID) {
            // The node began to shut down before the handler started: the stream would end at once.
            return RPCConnection.streamEndedByShutdown
        }
        let context = ServerContext(
            method: call.method,
            metadata: call.metadata,
            peer: call.peer,
            deadline: call.deadline,
            traceID: traceID,
            messageLog: messageLog
        )
        var status: WireV1.Status
        do {
            // The connection cancels this task when the deadline passes (`RPCConnection+Deadlines.swift`).
            try await ServerContext.$current.withValue(context) {
                try await route.handle(call, context)
            }
            status = WireV1.Status(code: .ok)
        } catch let convertible as any RPCErrorConvertible {
            let error = convertible.rpcError
            status = error.status
            // An RPCError without a cause was logged by its handler already; another module's error is its own.
            let cause = error.cause ?? (convertible is RPCError ? nil : convertible)
            if let cause, error.code == .internal || cause is ServerFailure {
                failureLog?(
                    CallFailure(method: call.method, traceID: traceID, status: error.message, cause: "\(cause)"))
            }
        } catch is CancellationError {
            status = WireV1.Status(code: .cancelled, message: "the call was cancelled")
        } catch {
            // Never leak internals to the peer; the cause goes to the server's own log.
            status = WireV1.Status(code: .internal, message: "internal error")
            failureLog?(
                CallFailure(method: call.method, traceID: traceID, status: status.message, cause: "\(error)"))
        }
        status.trailers = context.trailers.wire
        // Whatever the handler made of the cancellation, the caller has stopped waiting: the status says why. (Not
        // cancelled, the handler finished before the connection's deadline check: no clock read for that.) A
        // handler that simply returned once cancelled (a watch whose updates ended with its task) did not succeed:
        // its call, as the node's log reports it, was cancelled.
        if Task.isCancelled {
            if let deadline = call.deadline, ContinuousClock.now >= deadline {
                return WireV1.Status(code: .deadlineExceeded, message: "the deadline passed")
            }
            if status.code == .ok { return WireV1.Status(code: .cancelled, message: "the call was cancelled") }
        }
        return status
    }
}

/// The handler tasks of a server's calls that have been made and have not ended (`RPCServer.handlerCount`).
final class RunningHandlers: Sendable {
    private let running = Atomic<Int>(0)

    var count: Int { running.load(ordering: .acquiring) }

    func started() { running.add(1, ordering: .relaxed) }

    func ended() { running.subtract(1, ordering: .releasing) }
}
