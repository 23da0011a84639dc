/// A plaintext TCP connection driven by an `EventLoop`: the same driver, bounded buffers and backpressure as
/// `TLSConnection`, with no encryption and no peer identity. For local debugging only (`--plaintext`).
///
/// All methods may be called from any task. `write` returns once the bytes are accepted into the connection's
/// bounded outbound buffer; when the buffer is full it suspends until the socket drains. One `read` may be
/// outstanding at a time; concurrent writes are queued in call order. Without TLS there is no close_notify, so the
/// peer's TCP end-of-file ends the stream normally (`read` returns nil) and, as a close_notify does for TLS, closes
/// the connection: there is no half-close, later writes fail with `.connectionClosed`.
///
/// Dropping the last reference closes the connection.
public final class PlainConnection: Sendable {
    public struct Options: Sendable {
        /// Bytes waiting for the socket above which writers wait.
        public var outboundHighWater: Int
        /// Received bytes waiting for a reader above which the socket is no longer read.
        public var inboundHighWater: Int
        /// Deadline for the TCP connect.
        public var connectTimeout: Duration

        public init(
            outboundHighWater: Int = 256 * 1024, inboundHighWater: Int = 256 * 1024,
            connectTimeout: Duration = .seconds(10)
        ) {
            self.outboundHighWater = outboundHighWater
            self.inboundHighWater = inboundHighWater
            self.connectTimeout = connectTimeout
        }

        var limits: ConnectionStateMachine.Limits {
            .init(outboundHighWater: max(1, outboundHighWater), inboundHighWater: max(1, inboundHighWater))
        }
    }

    public let eventLoop: EventLoop
    private let handle: ConnectionHandle

    init(driver: LoopBound<ConnectionDriver>) {
        handle = ConnectionHandle(driver: driver)
        eventLoop = driver.loop
    }

    deinit {
        handle.closeSoon()
    }

    /// Connects to host:port (an IPv4 address or "localhost"). Throws `TransportError`. Cancelling the calling task
    /// ends an attempt not yet established with `.cancelled`.
    public static func connect(
        host: String, port: UInt16, on loop: EventLoop, options: Options = Options()
    ) async throws -> PlainConnection {
        try await ConnectAttempt.connect(on: loop) { resume throws(TransportError) in
            let fd = try Socket.startConnect(host: host, port: port)
            return ConnectionDriver.launch(
                loop: loop, fd: fd, engine: PassThroughEngine(), connecting: true, limits: options.limits,
                handshakeTimeout: options.connectTimeout
            ) { result in
                resume(result.map { PlainConnection(driver: $0.0) })
            }
        }
    }

    /// The next bytes received, in order; nil once the peer closed its side of the stream.
    /// Throws `TransportError`. Cancelling the calling task makes a pending read throw `.cancelled`; no received
    /// data is lost.
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

    /// Flushes what is buffered (at most a few seconds) and closes the socket. Pending reads and writes fail with
    /// `.connectionClosed`. Idempotent.
    public func close() async {
        await handle.close()
    }

    /// Ends the connection at once with a TCP reset, as a crashed host or a middlebox would: nothing still buffered
    /// is sent, and the peer's next read or write fails with ECONNRESET. Pending reads and writes here fail with
    /// `.connectionClosed`. For fault injection (`FaultProxy.reset`); `close()` is the orderly end.
    public func abort() async {
        await handle.abort(TransportError(.connectionClosed, "the connection was reset locally"))
    }

    /// The received byte chunks as an async sequence, ending when the peer closes.
    public var chunks: Chunks { Chunks(connection: self) }

    public struct Chunks: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let connection: PlainConnection

        public struct AsyncIterator: AsyncIteratorProtocol {
            let connection: PlainConnection
            public mutating func next() async throws -> [UInt8]? { try await connection.read() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(connection: connection) }
    }

    /// Buffering figures, for tests and diagnostics.
    func bufferState() async -> ConnectionBufferState {
        await handle.bufferState()
    }
}
