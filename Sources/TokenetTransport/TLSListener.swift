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

    /// Binds host:port (port 0 picks a free port) and starts accepting. Throws `TransportError`. A failed accept (the
    /// process out of file descriptors, say) goes to `onAcceptFailure`, or to `onHandshakeFailure` without one. With
    /// `handshakesPerAddress`, a connection from an address that already has that many handshakes in progress is
    /// closed at once and reported to `onHandshakeFailure` (see `HandshakeLimit`). `onHandshakeFailure` gets the
    /// peer's `address:port` too (nil for an accept failure): before its handshake a connection has nothing else to
    /// be told apart by in a log.
    public static func bind(
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        context: TLSContext,
        on loop: EventLoop,
        options: TLSConnection.Options = TLSConnection.Options(),
        onHandshakeFailure: @escaping @Sendable (TransportError, _ peer: String?) -> Void = { _, _ in },
        onAcceptFailure: (@Sendable (TransportError) -> Void)? = nil,
        handshakesPerAddress: Int? = nil
    ) async throws -> TLSListener {
        guard context.configuration.side == .server else {
            throw TransportError(.configuration, "TLSListener needs a server TLSContext")
        }
        let (stream, continuation) = AsyncStream<TLSConnection>.makeStream()
        return try await withCheckedThrowingContinuation { result in
            let submitted = loop.execute {
                let handshakes = handshakesPerAddress.map(HandshakeLimit.init)
                do throws(TransportError) {
                    let handler = try ListenerHandler.start(
                        host: host, port: port, loop: loop,
                        onAcceptFailure: onAcceptFailure ?? { onHandshakeFailure($0, nil) },
                        onStop: { continuation.finish() }
                    ) { client in
                        startConnection(
                            client, loop: loop, context: context, options: options, handshakes: handshakes,
                            connections: continuation, onHandshakeFailure: onHandshakeFailure)
                    }
                    result.resume(
                        returning: TLSListener(
                            host: host, port: handler.port, connections: stream,
                            handler: LoopBound(handler, loop: loop)))
                } catch {
                    continuation.finish()
                    result.resume(throwing: error)
                }
            }
            if !submitted { result.resume(throwing: TLSConnection.stopped(loop)) }
        }
    }

    /// Starts the TLS handshake on an accepted socket; only an established connection reaches `connections`.
    private static func startConnection(
        _ client: Int32, loop: EventLoop, context: TLSContext, options: TLSConnection.Options,
        handshakes: HandshakeLimit?, connections: AsyncStream<TLSConnection>.Continuation,
        onHandshakeFailure: @escaping @Sendable (TransportError, _ peer: String?) -> Void
    ) {
        // Read now, while the socket is connected: a refused handshake has no identity to report it by.
        let peer = Socket.peerDisplay(client)
        var address: HandshakeLimit.Source?
        if let handshakes {
            let (key, refusal) = handshakes.begin(client)
            if let refusal {
                Socket.close(client)
                onHandshakeFailure(refusal, peer)
                return
            }
            address = key
        }
        let engine: TLSEngine
        do throws(TransportError) {
            engine = try TLSEngine(context: context)
        } catch {
            if let address { handshakes?.end(address) }
            Socket.close(client)
            onHandshakeFailure(error, peer)
            return
        }
        ConnectionDriver.launch(
            loop: loop, fd: client, engine: engine, connecting: false, limits: options.limits,
            handshakeTimeout: options.handshakeTimeout
        ) { [address] result in
            if let address { handshakes?.end(address) }
            switch result.flatMap(TLSConnection.established) {
            case .success(let connection):
                // If nobody consumes `connections` any more, the connection is dropped, which closes it.
                _ = connections.yield(connection)
            case .failure(let error):
                // The handshake held a TLS engine and its buffers: a flood of connections that never finish theirs
                // (a scanner, a plaintext client) left the node at its peak size after they had gone, 200 MB
                // against 40 MB, until the heap is trimmed (once a second at most, however many fail).
                Heap.trimSoon()
                onHandshakeFailure(error, peer)
            }
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
