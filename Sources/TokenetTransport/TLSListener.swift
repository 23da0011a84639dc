import Glibc
import Synchronization

/// Accepts TCP connections on an event loop and completes their TLS handshakes there.
///
/// Only connections whose handshake succeeded (trusted certificate, valid Tokenet identity) appear in
/// `connections`. A failed handshake is reported to `onHandshakeFailure` and affects no other connection.
public final class TLSListener: Sendable {
    /// The bound port (useful when binding to port 0).
    public let port: UInt16
    public let host: String
    /// Established connections, in handshake completion order. Single consumer.
    public let connections: AsyncStream<TLSConnection>
    public let eventLoop: EventLoop
    private let handler: LoopBound<ListenerHandler>

    private init(
        host: String, port: UInt16, connections: AsyncStream<TLSConnection>, handler: LoopBound<ListenerHandler>
    ) {
        self.host = host
        self.port = port
        self.connections = connections
        self.handler = handler
        eventLoop = handler.loop
    }

    /// Binds host:port (port 0 picks a free port) and starts accepting. Throws `TransportError`.
    public static func bind(
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        context: TLSContext,
        on loop: EventLoop,
        options: TLSConnection.Options = TLSConnection.Options(),
        onHandshakeFailure: @escaping @Sendable (TransportError) -> Void = { _ in }
    ) async throws -> TLSListener {
        guard context.configuration.side == .server else {
            throw TransportError(.configuration, "TLSListener needs a server TLSContext")
        }
        let (stream, continuation) = AsyncStream<TLSConnection>.makeStream()
        return try await withCheckedThrowingContinuation { result in
            let submitted = loop.execute {
                do throws(TransportError) {
                    let (fd, boundPort) = try Socket.listen(host: host, port: port)
                    let handler = ListenerHandler(
                        loop: loop, fd: fd, context: context, options: options, connections: continuation,
                        onHandshakeFailure: onHandshakeFailure)
                    do throws(TransportError) {
                        try handler.start()
                    } catch {
                        Socket.close(fd)
                        throw error
                    }
                    result.resume(
                        returning: TLSListener(
                            host: host, port: boundPort, connections: stream,
                            handler: LoopBound(handler, loop: loop)))
                } catch {
                    continuation.finish()
                    result.resume(throwing: error)
                }
            }
            if !submitted { result.resume(throwing: TLSConnection.stopped(loop)) }
        }
    }

    /// Stops accepting and finishes `connections`. Established connections stay open.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let handler = handler
            if !eventLoop.execute({
                handler.value.stop()
                continuation.resume()
            }) {
                continuation.resume()
            }
        }
    }

    deinit {
        let handler = handler
        eventLoop.execute { handler.value.stop() }
    }
}

/// The listening socket's handler on the loop: accepts, and starts one `ConnectionDriver` per connection.
final class ListenerHandler: EventLoopHandler {
    /// After EMFILE/ENFILE the pending connection stays queued and epoll would report it again immediately;
    /// pausing accepts briefly avoids spinning while descriptors are exhausted.
    private static let acceptPause: Duration = .milliseconds(100)
    private static let acceptsPerWakeup = 64

    private let loop: EventLoop
    private let fd: Int32
    private let context: TLSContext
    private let options: TLSConnection.Options
    private let connections: AsyncStream<TLSConnection>.Continuation
    private let onHandshakeFailure: @Sendable (TransportError) -> Void
    private var registration: UInt64?

    init(
        loop: EventLoop, fd: Int32, context: TLSContext, options: TLSConnection.Options,
        connections: AsyncStream<TLSConnection>.Continuation,
        onHandshakeFailure: @escaping @Sendable (TransportError) -> Void
    ) {
        self.loop = loop
        self.fd = fd
        self.context = context
        self.options = options
        self.connections = connections
        self.onHandshakeFailure = onHandshakeFailure
    }

    func start() throws(TransportError) {
        registration = try loop.register(fd: fd, interest: .readOnly, handler: self)
    }

    func stop() {
        guard let registration else { return }
        loop.deregister(fd: fd, registration: registration)
        self.registration = nil
        Socket.close(fd)
        connections.finish()
    }

    func handleEvent(readable: Bool, writable: Bool, failed: Bool) {
        for _ in 0..<Self.acceptsPerWakeup {
            guard registration != nil else { return }
            let accepted: Int32?
            do throws(TransportError) {
                accepted = try Socket.accept(fd)
            } catch {
                onHandshakeFailure(error)
                pauseAccepting()
                return
            }
            guard let client = accepted else { return }
            startConnection(client)
        }
    }

    func eventLoopStopping() {
        stop()
    }

    private func startConnection(_ client: Int32) {
        let engine: TLSEngine
        do throws(TransportError) {
            engine = try TLSEngine(context: context)
        } catch {
            Socket.close(client)
            onHandshakeFailure(error)
            return
        }
        let loop = loop
        let connections = connections
        let onHandshakeFailure = onHandshakeFailure
        var driver: ConnectionDriver?
        driver = ConnectionDriver(
            loop: loop, fd: client, engine: engine, connecting: false, limits: options.limits
        ) { result in
            guard let established = driver else { return }
            driver = nil  // break the cycle driver -> handler -> driver
            switch result {
            case .success(let peer):
                // If nobody consumes `connections` any more, the connection is dropped, which closes it.
                _ = connections.yield(TLSConnection(peer: peer, driver: LoopBound(established, loop: loop)))
            case .failure(let error):
                onHandshakeFailure(error)
            }
        }
        driver?.start(handshakeTimeout: options.handshakeTimeout)
    }

    private func pauseAccepting() {
        guard let registration else { return }
        loop.setInterest(.none, fd: fd, registration: registration)
        let bound = LoopBound(self, loop: loop)
        loop.scheduleTimer(after: Self.acceptPause) {
            let handler = bound.value
            if let registration = handler.registration {
                handler.loop.setInterest(.readOnly, fd: handler.fd, registration: registration)
            }
        }
    }
}
