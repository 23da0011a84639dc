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
    private let handle: ConnectionHandle

    init(peer: PeerIdentity, driver: LoopBound<ConnectionDriver>) {
        self.peer = peer
        handle = ConnectionHandle(driver: driver)
        eventLoop = driver.loop
    }

    deinit {
        handle.closeSoon()
    }

    /// Connects to host:port (an IPv4 address or "localhost") and completes the TLS handshake.
    /// Throws `TransportError`. With TLS 1.3 a server's refusal of our certificate may only surface on the
    /// first `read`. Cancelling the calling task ends an attempt not yet established with `.cancelled`, so a
    /// caller's deadline holds even against a peer that accepts the connection and never answers the handshake.
    public static func connect(
        host: String, port: UInt16, context: TLSContext, on loop: EventLoop, options: Options = Options()
    ) async throws -> TLSConnection {
        guard context.configuration.side == .client else {
            throw TransportError(.configuration, "TLSConnection.connect needs a client TLSContext")
        }
        return try await ConnectAttempt.connect(on: loop) { resume throws(TransportError) in
            let engine = try TLSEngine(context: context)
            let fd = try Socket.startConnect(host: host, port: port)
            return ConnectionDriver.launch(
                loop: loop, fd: fd, engine: engine, connecting: true, limits: options.limits,
                handshakeTimeout: options.handshakeTimeout
            ) { result in
                resume(result.flatMap(TLSConnection.established))
            }
        }
    }

    /// Wraps an established driver; a TLS engine always reports a verified peer, so a missing one is refused.
    static func established(
        _ launched: (LoopBound<ConnectionDriver>, PeerIdentity?)
    ) -> Result<TLSConnection, TransportError> {
        guard let peer = launched.1 else {
            launched.0.loop.execute { [driver = launched.0] in driver.value.close(nil) }
            return .failure(TransportError(.peerIdentity, "TLS connection established without a peer identity"))
        }
        return .success(TLSConnection(peer: peer, driver: launched.0))
    }

    /// The next bytes received, in order; nil once the peer closed the stream with close_notify.
    /// Throws `TransportError` (for example `.unexpectedEOF` when the stream was cut without close_notify).
    /// Cancelling the calling task makes a pending read throw `.cancelled`; no received data is lost.
    public func read() async throws -> [UInt8]? {
        try await handle.read()
    }

    /// Instead of `read()`: hands every received chunk to `handler` on the event-loop thread as it arrives
    /// (`.success(nil)` at the end of the stream, `.failure` on an error), so no task is woken in between. The
    /// handler must be quick and must not block; there is no backpressure. Returns false when the loop stopped.
    public func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
        handle.receive(handler)
    }

    /// Queues `bytes` for sending, suspending while the outbound buffer is full. Throws `TransportError`.
    /// Cancelling the calling task withdraws the write (`.cancelled`) only if none of it was queued yet.
    public func write(_ bytes: [UInt8]) async throws {
        try await handle.write(bytes)
    }

    /// `write`, except that cancelling the calling task changes nothing: the bytes are sent, or the connection
    /// fails. For bytes the caller does not own alone, such as a batch of frames of many calls.
    public func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        try await handle.writeIgnoringCancellation(bytes)
    }

    /// For code running on `eventLoop` (a task that prefers it as its executor, or a `receive` handler): queues
    /// `bytes` like `write` but without suspending; `completion` runs on the loop once they are accepted (usually
    /// before this returns) or with the failure. Must be called on the loop thread.
    public func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        precondition(eventLoop.inEventLoop, "writeOnLoop called off the event loop")
        handle.writeOnLoop(bytes, completion: completion)
    }

    /// For code running on `eventLoop`: whether the peer is a process on this machine that last ran on the
    /// loop thread's CPU (sampled at most once a millisecond), so that it cannot start on a burst's first frames
    /// before this end yields the CPU. Must be called on the loop thread.
    public func peerSharesCPU() -> Bool {
        precondition(eventLoop.inEventLoop, "peerSharesCPU called off the event loop")
        return handle.peerSharesCPU()
    }

    /// Sends close_notify, flushes what is buffered (at most a few seconds) and closes the socket. Pending reads
    /// and writes fail with `.connectionClosed`. Idempotent.
    public func close() async {
        await handle.close()
    }

    /// Ends the connection at once with a TCP reset, without a close_notify: nothing still buffered is sent, and
    /// pending reads and writes here fail with `.connectionClosed`. For a peer that reads nothing more, which an
    /// orderly close would wait for until its timeout.
    public func abort() async {
        await handle.abort(TransportError(.connectionClosed, "the connection was reset locally"))
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

    typealias BufferState = ConnectionBufferState

    /// Buffering figures, for tests and diagnostics.
    func bufferState() async -> BufferState {
        await handle.bufferState()
    }

    static func stopped(_ loop: EventLoop) -> TransportError {
        ConnectionHandle.stopped(loop)
    }
}
