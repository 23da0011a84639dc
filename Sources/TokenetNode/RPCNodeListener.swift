import Foundation
import Synchronization
import TokenetRPC
import TokenetTransport
import TokenetWire

/// A node's RPC endpoint: a mutual-TLS listener served by an `RPCServer` with the node's router, the health
/// service and the reflection service (which lets `tokenet list/describe/call` work without `.proto` files).
///
/// Stopping is graceful and bounded: health turns NOT_SERVING, every connection gets a goaway, subscriptions end
/// UNAVAILABLE at once, and running calls get up to `drainTimeout` (`--drain-timeout`) to finish. Calls still
/// running then end UNAVAILABLE and their connections close, cutting off peers that read nothing. Meanwhile the
/// node's own background work towards its peers (its notification subscription, ...) is cancelled; once the drain
/// is over, its channels to peers close gracefully (`NodeOutgoing`, within `closeGrace`). After at most `closeGrace`
/// more the listener and the event loop close, which closes every socket left. Last, the party's database closes
/// (`NodeResources`).
public final class RPCNodeListener: NodeListener {
    public let boundAddress: HostPort
    public let server: RPCServer
    public let health: HealthService
    private let loop: EventLoop
    /// Stops accepting (closes the TLS or plaintext listener).
    private let closeListener: @Sendable () async -> Void
    private let serving: Task<Void, Never>
    private let drainTimeout: Duration
    private let logger: Logger
    private let outgoing: NodeOutgoing
    private let resources: NodeResources
    /// The throttles of the node's log lines, whose held-back lines are written as it stops.
    private let throttles: @Sendable () -> [LogThrottle]

    /// How long the statuses that end the calls left at the end of the drain have to leave before the event loop
    /// stops: a second is plenty for a peer that reads, and a peer that does not read is cut off either way.
    static let closeGrace: Duration = .seconds(1)
    /// How long a stop waits for the handlers of calls that ended (cancelled by the drain, or by their caller) to
    /// return before it closes the database under them.
    static let handlerGrace: Duration = .seconds(5)
    /// How long after its start a node takes a peer it cannot connect to as one still starting (an info line, and
    /// a warning only if it still cannot once this is over): parties started together wait for each other.
    static let startupGrace: Duration = .seconds(10)

    private init(
        boundAddress: HostPort,
        server: RPCServer,
        health: HealthService,
        loop: EventLoop,
        listener: BoundListener,
        drainTimeout: Duration,
        logger: Logger,
        outgoing: NodeOutgoing,
        resources: NodeResources,
        throttles: @escaping @Sendable () -> [LogThrottle]
    ) {
        self.throttles = throttles
        self.outgoing = outgoing
        self.resources = resources
        self.boundAddress = boundAddress
        self.server = server
        self.health = health
        self.loop = loop
        self.drainTimeout = drainTimeout
        self.logger = logger
        switch listener {
        case .tls(let listener):
            closeListener = { await listener.close() }
            serving = Task { await server.serve(listener: listener) }
        case .plain(let listener):
            closeListener = { await listener.close() }
            serving = Task { await server.serve(listener: listener) }
        }
    }

    /// The listener a node serves on: mutual TLS, or plaintext with `--plaintext`.
    private enum BoundListener: Sendable {
        case tls(TLSListener)
        case plain(PlainListener)

        var host: String {
            switch self {
            case .tls(let listener): listener.host
            case .plain(let listener): listener.host
            }
        }

        var port: UInt16 {
            switch self {
            case .tls(let listener): listener.port
            case .plain(let listener): listener.port
            }
        }
    }

    /// An error status's message as a node sends it: anything like a card number masked (see `maskPAN`), and cut
    /// to `statusMessageLimit` bytes when longer (a message that echoes a value of megabytes).
    /// A message's line at `trace`: the method, the peer and the message as proto3 JSON, its secrets left out
    /// (`MessageRedaction`).
    static func logMessage(_ record: MessageRecord, to logger: Logger) {
        let body: String
        if record.direction == .sent, MessageRedaction.deliveryMethods.contains(record.method) {
            body = "(not shown: the simulated messages hold one-time codes)"
        } else {
            do {
                body = MessageRedaction.redacted(try record.message.jsonValue()).text()
            } catch {
                body = "(not shown: \(error))"
            }
        }
        logger.withTraceID(record.traceID).trace(
            record.direction == .received ? "request" : "response",
            ["method": record.method, "peer": record.peer?.uri ?? "plaintext", "body": body])
    }

    static func statusMessage(_ message: String) -> String {
        let masked = maskPAN(message)
        guard masked.utf8.count > statusMessageLimit else { return masked }
        return String(decoding: masked.utf8.prefix(statusMessageLimit), as: UTF8.self)
            + "... (\(masked.utf8.count) bytes)"
    }

    static let statusMessageLimit = 2048

    /// What kind of problem ended a connection, for throttling its lines: the words before the first colon or digit
    /// (`read failed`, `a frame of`, `the first frame must be hello`), so that sizes and counts make no new kind.
    static func problemKind(_ problem: String) -> Substring {
        let end = problem.firstIndex { $0 == ":" || $0.isNumber } ?? problem.endIndex
        return problem[..<end].prefix(64)
    }

    /// A factory for `NodeMain.run` that serves the party's services (plus health and reflection) over mutual TLS
    /// (plaintext with `--plaintext`).
    public static func factory(services: @escaping NodeServices = { _ in RPCRouter() }) -> NodeListenerFactory {
        { options, logger throws(NodeError) in
            try bind(options: options, services: services, logger: logger)
        }
    }

    /// Binds and serves a fixed router (tests and nodes without services of their own).
    public static func bind(
        options: NodeOptions,
        router: RPCRouter,
        logger: Logger
    ) throws(NodeError) -> RPCNodeListener {
        try bind(options: options, services: { _ in router }, logger: logger)
    }

    /// Binds `options.listen` and serves `router` plus health over mutual TLS. With `--plaintext` (local debugging
    /// only) the same services are served over plain TCP: callers then have no identity, so methods restricted to
    /// roles answer them PERMISSION_DENIED while health stays open.
    public static func bind(
        options: NodeOptions,
        services: NodeServices,
        logger: Logger
    ) throws(NodeError) -> RPCNodeListener {
        let tls: TLSConfiguration?
        if options.plaintext {
            tls = nil
        } else {
            guard let certificate = options.certificatePath, let key = options.privateKeyPath, let ca = options.caPath
            else {
                throw NodeError(.config, "serving RPC needs --cert, --key and --ca")
            }
            tls = .server(certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: ca)
        }
        let loop: EventLoop
        do {
            loop = try EventLoop(name: "rpc", idlePoll: .microseconds(options.idlePollMicroseconds))
        } catch {
            throw NodeError(.listen, "cannot start the event loop", cause: DescribedError(error))
        }
        var router: RPCRouter
        // The services' background work (notification subscription, registration) starts once the port is bound.
        let outgoing = NodeOutgoing(holdingUntilStarted: true, startupGrace: Self.startupGrace)
        let resources = NodeResources()
        do {
            let context = NodeContext(
                options: options,
                logger: logger,
                dataDirectory: options.resolvedDataDirectory(node: logger.node),
                eventLoop: loop,
                outgoing: outgoing,
                resources: resources
            )
            router = try services(context)
        } catch {
            outgoing.cancelTasks()
            loop.shutdown()
            resources.closeAll(logger: logger)
            throw error
        }
        let health = HealthService(
            services: router.serviceNames.union([HealthV1.Health.serviceName, ReflectionV1.Reflection.serviceName]))
        health.register(on: &router)
        ReflectionService(router: router).register(on: &router)
        // One line per call at `debug`; a call that did not end OK gets its line at `info`, with the message its
        // caller got, so that why a flow failed is in the log of the node that said so (a client that gave up,
        // CANCELLED, is its own doing, and stays at `debug`). At `info` the node is told only of those calls. A
        // peer that fails call after call gets one line a second, with the count of its own not shown.
        // A throttle per peer: one client failing call after call would otherwise hide another's failures, and
        // count them on its own lines.
        let failedCalls = KeyedLogThrottles()
        let everyCall = logger.isEnabled(.debug)
        let logCall: @Sendable (CallRecord) -> Void = { record in
            let (seconds, attoseconds) = record.duration.components
            let microseconds = String(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
            let (method, peer, trace) = (record.method, record.peer?.uri ?? "plaintext", record.traceID)
            let status = record.code.protoValueName ?? String(record.code.rawValue)
            // Nor are the streams the node ends, and the calls it refuses, as it stops: every clean stop wrote a
            // "call failed" line for each subscriber.
            guard record.code != .ok, record.code != .cancelled, !record.endedByShutdown else {
                logger.debug(
                    "call",
                    ["method": method, "peer": peer, "status": status, "duration_us": microseconds, "trace_id": trace])
                return
            }
            let line: LogThrottle.Line = { notShown in
                guard notShown > 0 else {
                    logger.info(
                        "call failed",
                        [
                            "method": method, "peer": peer, "status": status, "message": record.message,
                            "duration_us": microseconds, "trace_id": trace,
                        ])
                    return
                }
                logger.info(
                    "call failed",
                    [
                        "method": method, "peer": peer, "status": status, "message": record.message,
                        "duration_us": microseconds, "trace_id": trace, "not_shown": String(notShown),
                    ])
            }
            // At `debug`, where every call has its line, none is held back.
            // Per peer and status: a peer failing one way call after call no longer hides its other failures (every
            // CLI user shares the operator's certificate, so one person's refusals hid another's).
            if everyCall { line(0) } else { failedCalls.throttle("\(peer) \(status)").submit(line) }
        }
        // At `trace`, each message of each call has its line too, as proto3 JSON: what a peer sent and was answered,
        // without a capture and its key log. Card numbers are masked as on every line; the encrypted card data a
        // message carries stays encrypted.
        let traceLogger = logger
        let logMessage: (@Sendable (MessageRecord) -> Void)? =
            logger.isEnabled(.trace) ? { @Sendable record in RPCNodeListener.logMessage(record, to: traceLogger) } : nil
        // A connection that ended in a problem (a protocol error, an unanswered ping, a failed read) is worth a
        // line at info: it is how an operator learns that a peer misbehaves or vanished. A clean close is not.
        // Throttled as refusals are: a peer that opens connections only to let them fail wrote a line for each (329
        // in one run), one a second says it with the count of those not shown.
        // One throttle per peer and kind of problem: in a burst the line shown was a peer's plain "read failed:
        // connection closed by peer …", and the oversized frames and missing hellos behind the lines not shown were
        // said by none.
        let closedWithProblems = KeyedLogThrottles()
        let logConnection: @Sendable (ConnectionRecord) -> Void = { record in
            let peer = record.peer?.uri ?? "plaintext"
            let (seconds, attoseconds) = record.duration.components
            let milliseconds = String(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
            if let problem = record.problem {
                closedWithProblems.throttle("\(peer) \(Self.problemKind(problem))").submit { notShown in
                    if notShown > 0 {
                        logger.info(
                            "connection closed",
                            [
                                "peer": peer, "duration_ms": milliseconds, "problem": problem,
                                "not_shown": String(notShown),
                            ])
                    } else {
                        logger.info(
                            "connection closed", ["peer": peer, "duration_ms": milliseconds, "problem": problem])
                    }
                }
            } else {
                logger.debug("connection closed", ["peer": peer, "duration_ms": milliseconds])
            }
        }
        // A call that failed inside the node: the caller saw INTERNAL, the operator needs the cause.
        let logFailure: @Sendable (CallFailure) -> Void = { failure in
            let log = logger.withTraceID(failure.traceID)
            // A change refused as the node stops, for a call that had already ended: part of the stop, no fault.
            if failure.cause.contains(NodeContext.stoppingRefusal) {
                log.info("\(failure.method) not finished: the node is stopping", ["status": failure.status])
                return
            }
            log.error("\(failure.method) failed", ["status": failure.status, "error": failure.cause])
        }
        // Error messages often echo what the caller sent (an id, a name): one holding a card number leaves masked,
        // as it would be in a log, and one that echoes a page of text is cut short.
        // A peer that keeps opening connections past its limit would write a line per attempt: one a second
        // names it, with the count of those not shown.
        let peerRefusals = LogThrottle()
        let logRefusal: @Sendable (ConnectionRefusal) -> Void = { refusal in
            logger.info(
                "connection refused", error: refusal.reason, peer: refusal.peer.uri, throttledBy: peerRefusals)
        }
        let server = RPCServer(
            router: router, timers: options.serverTimers, callLog: logCall, callLogScope: everyCall ? .all : .failures,
            messageLog: logMessage, connectionLog: logConnection, failureLog: logFailure,
            statusMessageFilter: { Self.statusMessage($0) },
            connectionsPerPeer: options.peerConnections, refusalLog: logRefusal)
        // A node out of file descriptors retries its accept ten times a second, and a scanner's connections can
        // fail their handshakes faster still: one line a second says each, with the count of those not shown. Each
        // kind has its own throttle: shared, the accept retries took the second and the handshake failures of a
        // flood went unsaid, counted in the accept line's "not shown".
        let acceptFailures = LogThrottle()
        let handshakeFailures = LogThrottle()
        // Connections closed for their address's handshakes in progress have lines of their own, so that a
        // scanner's failed handshakes never hide which address was held back.
        let handshakeRefusals = LogThrottle()
        let bound: Result<BoundListener, NodeError> = runBlocking {
            do {
                let (host, port) = (options.listen.host, options.listen.port)
                guard let tls else {
                    let listener = try await PlainListener.bind(host: host, port: port, on: loop) { failure in
                        logger.warning("accept failed", error: "\(failure)", throttledBy: acceptFailures)
                    }
                    return .success(.plain(listener))
                }
                let context = try TLSContext(configuration: tls)
                context.onKeyLogFailure { logger.warning($0) }
                let listener = try await TLSListener.bind(
                    host: host, port: port, context: context, on: loop,
                    onHandshakeFailure: { failure, peer in
                        // A client that gave up during its handshake refused nothing and was refused nothing: at
                        // debug, so that an interrupted CLI command leaves no line that reads as a refusal.
                        guard !failure.isCloseDuringHandshake else {
                            logger.debug(
                                "handshake abandoned: the peer closed the connection",
                                ["peer": peer ?? "unknown", "error": "\(failure)"])
                            return
                        }
                        // "refused" for the node's own limit (--address-handshakes), as the README names it;
                        // "failed" for the rest (a certificate from another CA, a client speaking plaintext), which a
                        // line of the same words made read as the limit.
                        let tooMany = failure.code == .tooManyHandshakes
                        let hint = PeerCertificateHint.serving("\(failure)").map { ": \($0)" } ?? ""
                        logger.info(
                            tooMany ? "handshake refused" : "handshake failed\(hint)", error: "\(failure)", peer: peer,
                            throttledBy: tooMany ? handshakeRefusals : handshakeFailures)
                    },
                    onAcceptFailure: { failure in
                        logger.warning("accept failed", error: "\(failure)", throttledBy: acceptFailures)
                    }, handshakesPerAddress: options.addressHandshakes)
                return .success(.tls(listener))
            } catch let error as TransportError where error.code == .invalidAddress {
                // The address is the operator's choice: in use by another process, not this host's, or a port
                // below 1024 without the right. A configuration problem (status 2), as a bad --listen is.
                let remedy = BindFailure.remedy(host: options.listen.host, reason: error.message)
                return .failure(NodeError(.config, "--listen \(options.listen): \(error.message); \(remedy)"))
            } catch let error as TransportError where error.code == .configuration {
                // The TLS files or SSLKEYLOGFILE: the operator's to fix, a configuration problem (status 2) as the
                // README has it, not a failure to serve (1).
                return .failure(NodeError(.config, error.message))
            } catch {
                return .failure(NodeError(.listen, "cannot serve on \(options.listen)", cause: DescribedError(error)))
            }
        }
        let listener: BoundListener
        do {
            listener = try bound.get()
        } catch {
            outgoing.cancelTasks()
            loop.shutdown()  // its thread would otherwise outlive the failed start
            resources.closeAll(logger: logger)
            throw error
        }
        outgoing.startHeld()
        return RPCNodeListener(
            boundAddress: HostPort(host: listener.host, port: listener.port),
            server: server,
            health: health,
            loop: loop,
            listener: listener,
            drainTimeout: .milliseconds(options.drainTimeoutMilliseconds),
            logger: logger,
            outgoing: outgoing,
            resources: resources,
            throttles: {
                failedCalls.all + closedWithProblems.all + [
                    peerRefusals, acceptFailures, handshakeFailures, handshakeRefusals,
                ]
            }
        )
    }

    public func stop() {
        health.markAllNotServing()
        server.shutdown()
        outgoing.cancelTasks()
        let (server, closeListener, logger, outgoing, resources) = (server, closeListener, logger, outgoing, resources)
        let drainTimeout = drainTimeout
        _ = runBlocking { () -> Bool in
            if await !Self.waitForConnections(of: server, toCloseWithin: drainTimeout) {
                // Whatever is left waits for a peer that sends or reads nothing more, or works past the limit the
                // operator set: the node must still stop.
                let reason = "the node is shutting down and the call did not finish within \(drainTimeout)"
                let open = server.endDrain(reason: reason)
                logger.info("drain period over: ending the calls left", ["connections": String(open)])
                _ = await Self.waitForConnections(of: server, toCloseWithin: Self.closeGrace)
            }
            // A connection ends without waiting for the handlers it cancelled (a database transaction runs on once
            // cancelled): the database is closed below only once they have returned. Their changes not yet begun
            // are refused now: each could wait out another process's lock in turn, past the stop's bound.
            resources.callsEnded()
            if await !server.waitForHandlers(within: Self.handlerGrace) {
                logger.warning(
                    "call handlers still running \(Self.handlerGrace) after their calls ended; stopping under them",
                    ["handlers": String(server.handlerCount)])
            }
            // The calls served are over, so nothing needs the channels to peers any more.
            if await !outgoing.close(within: Self.closeGrace) {
                logger.info("calls to peers still open after \(Self.closeGrace); closing their connections")
            }
            await closeListener()
            return true
        }
        serving.cancel()
        loop.shutdown()
        // The lines held back (the drain's last "call failed" lines) are written before the node's last lines.
        for throttle in throttles() { throttle.flushHeldBack() }
        // Nothing serves calls or runs towards peers any more: the database can be closed (which checkpoints it).
        resources.closeAll(logger: logger)
    }

    /// Polls until `server` has no connection left; false when `limit` passed first.
    private static func waitForConnections(of server: RPCServer, toCloseWithin limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while server.connectionCount > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}
