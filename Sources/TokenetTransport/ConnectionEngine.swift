/// What `ConnectionDriver` needs from the layer between the socket and the application's bytes: TLS
/// (`TLSEngine`) or nothing at all (`PassThroughEngine`, for plaintext debug connections).
///
/// The names follow TLS because it is the demanding case: "ciphertext" is whatever travels on the wire and
/// "plaintext" what the application reads and writes; for the pass-through engine the two are the same bytes.
/// Keeping one driver for both means the bounded buffers, backpressure and close handling are written (and
/// tested) once.
protocol ConnectionEngine: AnyObject {
    typealias HandshakeStatus = TLSEngine.HandshakeStatus

    /// The authenticated peer once the handshake completed; always nil for an engine without authentication.
    var peer: PeerIdentity? { get }

    /// Free space of at least `minimum` bytes to read the socket into, in place; then `ciphertextReceived`.
    func ciphertextSpace(atLeast minimum: Int) -> UnsafeMutableRawBufferPointer
    /// `count` bytes were written into the space `ciphertextSpace` returned.
    func ciphertextReceived(_ count: Int)
    /// The transport delivered end-of-file.
    func receiveEOF()
    /// Appends every byte that must be sent to `buffer` (the driver's send buffer), without an intermediate array.
    func takeCiphertext(appendingTo buffer: inout [UInt8])
    /// Bytes waiting to be sent.
    var pendingCiphertextCount: Int { get }
    /// The bytes waiting to be sent, in place, valid until the next call on the engine: the driver sends from
    /// here and then drops what the socket took.
    var pendingCiphertext: UnsafeRawBufferPointer { get }
    func dropCiphertext(_ count: Int)
    func handshake() throws(TransportError) -> HandshakeStatus
    /// Reads up to `maxCount` bytes and appends them to `buffer`, so one read's records land in one array.
    func readPlaintext(appendingTo buffer: inout [UInt8], maxCount: Int) throws(TransportError)
        -> TLSEngine.AppendResult
    /// At least the number of plaintext bytes that reading now can produce.
    var plaintextBound: Int { get }
    /// Reads plaintext into `buffer`; `.appended(n)` means its first n bytes were filled.
    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> TLSEngine.AppendResult
    func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TransportError)
    /// Queues the orderly end of the stream (a TLS close_notify); safe to call more than once.
    func close()
}

extension TLSEngine: ConnectionEngine {}
