import Foundation
import TokenetRPC
import TokenetTransport
import TokenetWire

/// A node's RPC endpoint: a mutual-TLS listener served by an `RPCServer` with the node's router, the health
/// service and the reflection service (which lets `tokenet list/describe/call` work without `.proto` files).
///
/// Stopping is graceful: health turns NOT_SERVING, every connection gets a goaway, running calls get up to
/// `drainTimeout` to finish, then the listener and the event loop close.
public final class RPCNodeListener: NodeListener {
    public let boundAddress: HostPort
    public let server: RPCServer
    public let health: HealthService
    private let loop: EventLoop
    private let listener: TLSListener
    private let serving: Task<Void, Never>
    private let drainTimeout: Duration

    private init(
        boundAddress: HostPort,
        server: RPCServer,
        health: HealthService,
        loop: EventLoop,
        listener: TLSListener,
        drainTimeout: Duration
    ) {
        self.boundAddress = boundAddress
        self.server = server
        self.health = health
        self.loop = loop
        self.listener = listener
        self.drainTimeout = drainTimeout
        self.serving = Task { await server.serve(listener: listener) }
    }

    /// A factory for `NodeMain.run` that serves `router` (plus health) over mutual TLS.
    public static func factory(
        router: RPCRouter = RPCRouter(),
        drainTimeout: Duration = .seconds(10)
    ) -> NodeListenerFactory {
        { options, logger throws(NodeError) in
            try bind(options: options, router: router, logger: logger, drainTimeout: drainTimeout)
        }
    }

    public static func bind(
        options: NodeOptions,
        router: RPCRouter,
        logger: Logger,
        drainTimeout: Duration = .seconds(10)
    ) throws(NodeError) -> RPCNodeListener {
        guard let certificate = options.certificatePath, let key = options.privateKeyPath, let ca = options.caPath
        else {
            throw NodeError(.config, "serving RPC needs --cert, --key and --ca")
        }
        var router = router
        let health = HealthService(
            services: router.serviceNames.union([HealthV1.Health.serviceName, ReflectionV1.Reflection.serviceName]))
        health.register(on: &router)
        ReflectionService(router: router).register(on: &router)
        let server = RPCServer(router: router) { record in
            logger.debug(
                "call",
                [
                    "method": record.method, "peer": record.peer?.uri ?? "plaintext",
                    "status": record.code.protoValueName ?? String(record.code.rawValue),
                    "duration_us": String(
                        record.duration.components.seconds * 1_000_000
                            + record.duration.components.attoseconds / 1_000_000_000_000),
                    "trace_id": record.traceID,
                ])
        }
        let bound: Result<(EventLoop, TLSListener), NodeError> = blockingAwait {
            do {
                let loop = try EventLoop(name: "rpc")
                let context = try TLSContext(
                    configuration: .server(certificateChainFile: certificate, privateKeyFile: key, trustedCAFile: ca))
                let listener = try await TLSListener.bind(
                    host: options.listen.host, port: options.listen.port, context: context, on: loop
                ) { failure in
                    logger.info("handshake refused", ["error": "\(failure)"])
                }
                return .success((loop, listener))
            } catch {
                return .failure(NodeError(.listen, "cannot serve on \(options.listen)", cause: DescribedError(error)))
            }
        }
        let (loop, listener) = try bound.get()
        return RPCNodeListener(
            boundAddress: HostPort(host: listener.host, port: listener.port),
            server: server,
            health: health,
            loop: loop,
            listener: listener,
            drainTimeout: drainTimeout
        )
    }

    public func stop() {
        health.markAllNotServing()
        server.shutdown()
        let server = server
        let listener = listener
        let drainTimeout = drainTimeout
        _ = blockingAwait { () -> Bool in
            let deadline = ContinuousClock.now + drainTimeout
            while server.connectionCount > 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(10))
            }
            await listener.close()
            return true
        }
        serving.cancel()
        loop.shutdown()
    }
}

/// Runs async work from synchronous start-up and shutdown code, which runs on the main thread outside the
/// cooperative pool, so blocking here never starves the tasks it waits for.
private func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let semaphore = DispatchSemaphore(value: 0)
    let result = ResultBox<T>()
    Task {
        result.value = await body()
        semaphore.signal()
    }
    semaphore.wait()
    return result.value!
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    var value: T?
}
