/// An established, mutually authenticated TLS connection driven by an `EventLoop`.
///
/// All methods may be called from any task. `write` returns once the bytes are accepted into the connection's
/// bounded outbound buffer (not when the peer has read them); when the buffer is full it suspends until the
/// socket drains, so a peer that stops reading slows writers down instead of growing memory. One `read` may be
/// outstanding at a time; concurrent writes are queued in call order.
///
/// Dropping the last reference closes the connection.
public final class TLSConnection: Sendable {
    public struct Options: Sendable {
        /// Ciphertext waiting for the socket above which writers wait.
        public var outboundHighWater: Int
        /// Decrypted bytes waiting for a reader above which the socket is no longer read.
        public var inboundHighWater: Int
        /// Deadline for the TCP connect plus the TLS handshake.
        public var handshakeTimeout: Duration

        public init(
            outboundHighWater: Int = 256 * 1024, inboundHighWater: Int = 256 * 1024,
            handshakeTimeout: Duration = .seconds(10)
        ) {
            self.outboundHighWater = outboundHighWater
            self.inboundHighWater = inboundHighWater
            self.handshakeTimeout = handshakeTimeout
        }

        var limits: ConnectionStateMachine.Limits {
            .init(outboundHighWater: max(1, outboundHighWater), inboundHighWater: max(1, inboundHighWater))
        }
    }

    /// The verified identity of the other end.
    public let peer: PeerIdentity
    public let eventLoop: EventLoop
    private let driver: LoopBound<ConnectionDriver>

    init(peer: PeerIdentity, driver: LoopBound<ConnectionDriver>) {
        self.peer = peer
        self.driver = driver
        eventLoop = driver.loop
    }

    deinit {
        let driver = driver
        eventLoop.execute { driver.value.close(nil) }
    }

    /// Connects to host:port (an IPv4 address or "localhost") and completes the TLS handshake.
    /// Throws `TransportError`. With TLS 1.3 a server's refusal of our certificate may only surface on the
    /// first `read`.
    public static func connect(
        host: String, port: UInt16, context: TLSContext, on loop: EventLoop, options: Options = Options()
    ) async throws -> TLSConnection {
        guard context.configuration.side == .client else {
            throw TransportError(.configuration, "TLSConnection.connect needs a client TLSContext")
        }
        return try await withCheckedThrowingContinuation { continuation in
            let submitted = loop.execute {
                do throws(TransportError) {
                    let engine = try TLSEngine(context: context)
                    let fd = try Socket.startConnect(host: host, port: port)
                    var driver: ConnectionDriver?
                    driver = ConnectionDriver(
                        loop: loop, fd: fd, engine: engine, connecting: true, limits: options.limits
                    ) { result in
                        guard let established = driver else { return }
                        driver = nil  // break the cycle driver -> handler -> driver
                        continuation.resume(
                            with: result.map { TLSConnection(peer: $0, driver: LoopBound(established, loop: loop)) })
                    }
                    driver?.start(handshakeTimeout: options.handshakeTimeout)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !submitted { continuation.resume(throwing: Self.stopped(loop)) }
        }
    }

    /// The next bytes received, in order; nil once the peer closed the stream with close_notify.
    /// Throws `TransportError` (for example `.unexpectedEOF` when the stream was cut without close_notify).
    /// Cancelling the calling task makes a pending read throw `.cancelled`; no received data is lost.
    public func read() async throws -> [UInt8]? {
        let (driver, loop, token) = (driver, eventLoop, RequestToken())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if !loop.execute({ driver.value.read(token, continuation) }) {
                    continuation.resume(throwing: Self.stopped(loop))
                }
            }
        } onCancel: {
            token.cancel()
            loop.execute { driver.value.cancelRead(token) }
        }
    }

    /// Queues `bytes` for sending, suspending while the outbound buffer is full. Throws `TransportError`.
    /// Cancelling the calling task withdraws the write (`.cancelled`) only if none of it was queued yet.
    public func write(_ bytes: [UInt8]) async throws {
        let (driver, loop, token) = (driver, eventLoop, RequestToken())
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if !loop.execute({ driver.value.write(bytes, token, continuation) }) {
                    continuation.resume(throwing: Self.stopped(loop))
                }
            }
        } onCancel: {
            token.cancel()
            loop.execute { driver.value.cancelWrite(token) }
        }
    }

    /// Sends close_notify, flushes what is buffered (at most a few seconds) and closes the socket. Pending reads
    /// and writes fail with `.connectionClosed`. Idempotent.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let driver = driver
            if !eventLoop.execute({ driver.value.close(continuation) }) { continuation.resume() }
        }
    }

    /// The received byte chunks as an async sequence, ending at the peer's close_notify.
    public var chunks: Chunks { Chunks(connection: self) }

    public struct Chunks: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let connection: TLSConnection

        public struct AsyncIterator: AsyncIteratorProtocol {
            let connection: TLSConnection
            public mutating func next() async throws -> [UInt8]? { try await connection.read() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(connection: connection) }
    }

    /// Buffering figures, for tests and diagnostics.
    struct BufferState: Sendable {
        var outboundBuffered: Int
        var peakOutboundBuffered: Int
        var hasWaitingWriter: Bool
    }

    func bufferState() async -> BufferState {
        await withCheckedContinuation { continuation in
            let driver = driver
            let submitted = eventLoop.execute {
                let value = driver.value
                continuation.resume(
                    returning: BufferState(
                        outboundBuffered: value.outboundBuffered, peakOutboundBuffered: value.peakOutboundBuffered,
                        hasWaitingWriter: value.hasWaitingWriter))
            }
            if !submitted {
                continuation.resume(
                    returning: BufferState(outboundBuffered: 0, peakOutboundBuffered: 0, hasWaitingWriter: false))
            }
        }
    }

    static func stopped(_ loop: EventLoop) -> TransportError {
        TransportError(.eventLoopStopped, "event loop \(loop.name) stopped")
    }
}
