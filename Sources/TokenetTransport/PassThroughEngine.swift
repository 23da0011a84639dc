/// The engine of a plaintext connection: the bytes on the wire are the application's bytes.
///
/// It is established as soon as the socket is connected, has no peer identity, and treats the peer's TCP
/// end-of-file as the orderly end of the stream (there is no close_notify to tell truncation apart). Inbound bytes
/// wait here only until the driver moves them to its reader queue, so the driver's limits bound memory as with TLS.
///
/// Not thread-safe: an engine belongs to one event loop (or one test).
final class PassThroughEngine: ConnectionEngine {
    private let inbound = ByteQueue(initialCapacity: 64 * 1024)
    private let outbound = ByteQueue()
    private var receivedEOF = false

    var peer: PeerIdentity? { nil }

    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        inbound.append(bytes)
    }

    func ciphertextSpace(atLeast minimum: Int) -> UnsafeMutableRawBufferPointer {
        inbound.freeSpace(atLeast: minimum)
    }

    func ciphertextReceived(_ count: Int) {
        inbound.commit(count)
    }

    func receiveEOF() {
        receivedEOF = true
    }

    func takeCiphertext(maxCount: Int) -> [UInt8] {
        let count = min(maxCount, outbound.count)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = outbound.take(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    func takeCiphertext(appendingTo buffer: inout [UInt8]) {
        buffer.append(contentsOf: outbound.bytes)
        outbound.consume(outbound.count)
    }

    var pendingCiphertextCount: Int { outbound.count }

    var pendingCiphertext: UnsafeRawBufferPointer { outbound.bytes }

    func dropCiphertext(_ count: Int) {
        outbound.consume(count)
    }

    func handshake() throws(TransportError) -> HandshakeStatus {
        .complete
    }

    func readPlaintext(maxCount: Int) throws(TransportError) -> TLSEngine.ReadResult {
        guard !inbound.isEmpty else { return receivedEOF ? .closed : .needsMoreData }
        let count = min(inbound.count, max(1, maxCount))
        return .plaintext(
            [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = inbound.take(into: UnsafeMutableRawBufferPointer(buffer))
            })
    }

    func readPlaintext(appendingTo buffer: inout [UInt8], maxCount: Int) throws(TransportError)
        -> TLSEngine.AppendResult
    {
        guard !inbound.isEmpty else { return receivedEOF ? .closed : .needsMoreData }
        let count = min(inbound.count, max(1, maxCount))
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: inbound.bytes[..<count]))
        inbound.consume(count)
        return .appended(count)
    }

    var plaintextBound: Int { inbound.count }

    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> TLSEngine.AppendResult {
        guard !inbound.isEmpty else { return receivedEOF ? .closed : .needsMoreData }
        return .appended(inbound.take(into: buffer))
    }

    func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        outbound.append(bytes)
    }

    /// Nothing to queue: closing the socket once the outbound bytes are flushed ends the stream (TCP FIN).
    func close() {}
}
