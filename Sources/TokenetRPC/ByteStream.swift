import TokenetTransport

/// An ordered, reliable byte stream to one peer: a TLS connection, or an in-memory pipe in tests.
///
/// The RPC layer frames and multiplexes calls on top of it and needs nothing else, which is what lets most flow tests
/// run in memory while live tests use real TLS on loopback.
public protocol ByteStream: Sendable {
    /// Who the peer is, from its certificate; nil in plaintext (debug) mode.
    var peerIdentity: PeerIdentity? { get }
    /// The next chunk of bytes, or nil at the end of the stream.
    func read() async throws -> [UInt8]?
    /// Writes all of `bytes`; suspends while the stream's outbound buffer is full. Cancelling the calling task may
    /// withdraw a write that has not started.
    func write(_ bytes: [UInt8]) async throws
    /// `write`, except that the calling task's cancellation never withdraws it. A connection's batch holds frames
    /// of many calls: a handler or caller that writes it must not lose the others' frames when it is cancelled.
    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws
    /// Closes the stream; pending reads end.
    func close() async
    /// Ends the stream at once (a TCP reset): nothing still buffered is sent, pending reads and writes fail. For a
    /// peer that takes nothing more, where an orderly close would wait for it in vain.
    func abort() async
    /// Instead of `read()`: hands each received chunk to `handler` as it arrives, on the stream's own thread
    /// (`.success(nil)` at the end, `.failure` on an error). Returns false when the stream cannot do that; the
    /// caller then reads with `read()`.
    func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool
    /// The event loop whose thread runs this stream (and `receive` handlers), or nil. Tasks that prefer it as
    /// their executor run on that thread, where `writeOnLoop` hands bytes over without a thread hop.
    var loop: EventLoop? { get }
    /// On `loop`'s thread only: queues `bytes` like `write` without suspending; `completion` runs on the loop once
    /// they are accepted (usually before this returns) or failed.
    func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// On `loop`'s thread only: whether the peer last ran on this thread's CPU, so that writing a burst in pieces
    /// cannot get it started any earlier (see `RPCConnection.flushOnLoop`). False when unknown.
    func peerSharesCPU() -> Bool
}

extension ByteStream {
    public func abort() async { await close() }

    public func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
        false
    }

    public var loop: EventLoop? { nil }

    public func peerSharesCPU() -> Bool { false }

    public func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        Task {
            do {
                try await write(bytes)
                completion(.success(()))
            } catch {
                completion(.failure(error))
            }
        }
    }
}

extension TLSConnection: ByteStream {
    public var peerIdentity: PeerIdentity? { peer }
    public var loop: EventLoop? { eventLoop }
}

/// Plaintext (debug) connections carry no certificate, so methods restricted to roles refuse their callers.
extension PlainConnection: ByteStream {
    public var peerIdentity: PeerIdentity? { nil }
    public var loop: EventLoop? { eventLoop }
}
