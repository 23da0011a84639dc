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
    /// Writes all of `bytes`; suspends while the stream's outbound buffer is full.
    func write(_ bytes: [UInt8]) async throws
    /// Closes the stream; pending reads end.
    func close() async
}

extension TLSConnection: ByteStream {
    public var peerIdentity: PeerIdentity? { peer }
}

/// Plaintext (debug) connections carry no certificate, so methods restricted to roles refuse their callers.
extension PlainConnection: ByteStream {
    public var peerIdentity: PeerIdentity? { nil }
}
