/// What `TLSConnection` and `PlainConnection` share: a connection driven by an `EventLoop`, with bounded buffers
/// and backpressure, read and written from any task through its `ConnectionHandle`. The two differ only in how they
/// are opened, what they know of the peer, and what ends their stream normally (a TLS close_notify; TCP end-of-file
/// without TLS).
///
/// All methods may be called from any task. `write` returns once the bytes are accepted into the connection's
/// bounded outbound buffer (not when the peer has read them); when the buffer is full it suspends until the
/// socket drains, so a peer that stops reading slows writers down instead of growing memory. One `read` may be
/// outstanding at a time; concurrent writes are queued in call order.
///
/// Dropping the last reference closes the connection.
///
/// `@unchecked` only because a class with subclasses cannot have its `Sendable` checked: its stored properties are
/// `let`s of `Sendable` types, and it can be subclassed only in this module, by final classes that add `let`s.
public class EventLoopConnection: @unchecked Sendable {
    public let eventLoop: EventLoop
    let handle: ConnectionHandle

    init(driver: LoopBound<ConnectionDriver>) {
        handle = ConnectionHandle(driver: driver)
        eventLoop = driver.loop
    }

    deinit {
        handle.closeSoon()
    }

    /// The next bytes received, in order; nil once the peer ended the stream normally. Throws `TransportError`
    /// (for example `.unexpectedEOF` when a TLS stream was cut without close_notify). Cancelling the calling task
    /// makes a pending read throw `.cancelled`; no received data is lost.
    public final func read() async throws -> [UInt8]? {
        try await handle.read()
    }

    /// Instead of `read()`: hands every received chunk to `handler` on the event-loop thread as it arrives
    /// (`.success(nil)` at the end of the stream, `.failure` on an error), so no task is woken in between. The
    /// handler must be quick and must not block; there is no backpressure. Returns false when the loop stopped.
    public final func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
        handle.receive(handler)
    }

    /// Queues `bytes` for sending, suspending while the outbound buffer is full. Throws `TransportError`.
    /// Cancelling the calling task withdraws the write (`.cancelled`) only if none of it was queued yet.
    public final func write(_ bytes: [UInt8]) async throws {
        try await handle.write(bytes)
    }

    /// `write`, except that cancelling the calling task changes nothing: the bytes are sent, or the connection
    /// fails. For bytes the caller does not own alone, such as a batch of frames of many calls.
    public final func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        try await handle.writeIgnoringCancellation(bytes)
    }

    /// For code running on `eventLoop` (a task that prefers it as its executor, or a `receive` handler): queues
    /// `bytes` like `write` but without suspending; `completion` runs on the loop once they are accepted (usually
    /// before this returns) or with the failure. Must be called on the loop thread.
    public final func writeOnLoop(
        _ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        precondition(eventLoop.inEventLoop, "writeOnLoop called off the event loop")
        handle.writeOnLoop(bytes, completion: completion)
    }

    /// For code running on `eventLoop`: whether the peer is a process on this machine that last ran on the
    /// loop thread's CPU (sampled at most once a millisecond), so that it cannot start on a burst's first frames
    /// before this end yields the CPU. Must be called on the loop thread.
    public final func peerSharesCPU() -> Bool {
        precondition(eventLoop.inEventLoop, "peerSharesCPU called off the event loop")
        return handle.peerSharesCPU()
    }

    /// Ends the stream in order (a TLS connection sends close_notify first), flushes what is buffered (at most a
    /// few seconds) and closes the socket. Pending reads and writes fail with `.connectionClosed`. Idempotent.
    public final func close() async {
        await handle.close()
    }

    /// Ends the connection at once with a TCP reset, as a crashed host or a middlebox would: nothing still buffered
    /// is sent (no close_notify either), the peer's next read or write fails with ECONNRESET, and pending reads and
    /// writes here fail with `.connectionClosed`. For a peer that reads nothing more, which an orderly close would
    /// wait for until its timeout, and for fault injection (`FaultProxy.reset`).
    public final func abort() async {
        await handle.abort(TransportError(.connectionClosed, "the connection was reset locally"))
    }

    /// The received byte chunks as an async sequence, ending when the peer ends the stream normally.
    public final var chunks: Chunks { Chunks(connection: self) }

    public struct Chunks: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        let connection: EventLoopConnection

        public struct AsyncIterator: AsyncIteratorProtocol {
            let connection: EventLoopConnection
            public mutating func next() async throws -> [UInt8]? { try await connection.read() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(connection: connection) }
    }

    /// Buffering figures, for tests and diagnostics.
    final func bufferState() async -> ConnectionBufferState {
        await handle.bufferState()
    }
}
