/// Accepts plaintext TCP connections on an event loop. For local debugging only (`--plaintext`): peers are not
/// authenticated and traffic is not encrypted.
///
/// A plaintext connection is established as soon as it is accepted, so every accepted socket appears in
/// `connections`. Accept failures (for example descriptor exhaustion) are reported to `onAcceptFailure`.
public final class PlainListener: Sendable {
    /// The bound port (useful when binding to port 0).
    public let port: UInt16
    public let host: String
    /// Accepted connections, in accept order. Single consumer.
    public let connections: AsyncStream<PlainConnection>
    public let eventLoop: EventLoop
    private let handler: LoopBound<ListenerHandler>

    private init(
        host: String, port: UInt16, connections: AsyncStream<PlainConnection>, handler: LoopBound<ListenerHandler>
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
        on loop: EventLoop,
        options: PlainConnection.Options = PlainConnection.Options(),
        onAcceptFailure: @escaping @Sendable (TransportError) -> Void = { _ in }
    ) async throws -> PlainListener {
        let (stream, continuation) = AsyncStream<PlainConnection>.makeStream()
        return try await withCheckedThrowingContinuation { result in
            let submitted = loop.execute {
                do throws(TransportError) {
                    let handler = try ListenerHandler.start(
                        host: host, port: port, loop: loop, onAcceptFailure: onAcceptFailure,
                        onStop: { continuation.finish() }
                    ) { client in
                        ConnectionDriver.launch(
                            loop: loop, fd: client, engine: PassThroughEngine(), connecting: false,
                            limits: options.limits, halfClose: options.halfClose,
                            handshakeTimeout: options.connectTimeout
                        ) { established in
                            switch established {
                            case .success(let (driver, _)):
                                // If nobody consumes `connections` any more, the connection is dropped, which
                                // closes it.
                                _ = continuation.yield(PlainConnection(driver: driver))
                            case .failure(let error):
                                onAcceptFailure(error)
                            }
                        }
                    }
                    result.resume(
                        returning: PlainListener(
                            host: host, port: handler.port, connections: stream,
                            handler: LoopBound(handler, loop: loop)))
                } catch {
                    continuation.finish()
                    result.resume(throwing: error)
                }
            }
            if !submitted { result.resume(throwing: ConnectionHandle.stopped(loop)) }
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
