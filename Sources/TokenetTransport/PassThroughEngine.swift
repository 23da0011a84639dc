/// The engine of a plaintext connection: the bytes on the wire are the application's bytes.
///
/// It is established as soon as the socket is connected, has no peer identity, and treats the peer's TCP
/// end-of-file as the orderly end of the stream (there is no close_notify to tell truncation apart). Inbound bytes
/// wait here only until the driver moves them to its reader queue, so the driver's limits bound memory as with TLS.
///
/// Not thread-safe: an engine belongs to one event loop (or one test).
final class PassThroughEngine: ConnectionEngine {
    private var inbound: [UInt8] = []
    private var inboundOffset = 0
    private var outbound: [UInt8] = []
    private var receivedEOF = false

    var peer: PeerIdentity? { nil }

    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        if inboundOffset == inbound.count {
            inbound.removeAll(keepingCapacity: true)
            inboundOffset = 0
        }
        inbound += bytes
    }

    func receiveEOF() {
        receivedEOF = true
    }

    func takeCiphertext(maxCount: Int) -> [UInt8] {
        guard maxCount < outbound.count else {
            defer { outbound.removeAll(keepingCapacity: true) }
            return outbound
        }
        defer { outbound.removeFirst(maxCount) }
        return Array(outbound[..<maxCount])
    }

    func takeCiphertext(appendingTo buffer: inout [UInt8]) {
        buffer += outbound
        outbound.removeAll(keepingCapacity: true)
    }

    var pendingCiphertextCount: Int { outbound.count }

    func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(buffer.count, outbound.count)
        outbound.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        outbound.removeFirst(count)
        return count
    }

    func handshake() throws(TransportError) -> HandshakeStatus {
        .complete
    }

    func readPlaintext(maxCount: Int) throws(TransportError) -> ReadResult {
        let available = inbound.count - inboundOffset
        guard available > 0 else { return receivedEOF ? .closed : .needsMoreData }
        let end = inboundOffset + min(available, max(1, maxCount))
        defer { inboundOffset = end }
        return .plaintext(Array(inbound[inboundOffset..<end]))
    }

    func readPlaintext(appendingTo buffer: inout [UInt8], maxCount: Int) throws(TransportError)
        -> TLSEngine.AppendResult
    {
        let available = inbound.count - inboundOffset
        guard available > 0 else { return receivedEOF ? .closed : .needsMoreData }
        let end = inboundOffset + min(available, max(1, maxCount))
        buffer += inbound[inboundOffset..<end]
        defer { inboundOffset = end }
        return .appended(end - inboundOffset)
    }

    var plaintextBound: Int { inbound.count - inboundOffset }

    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> TLSEngine.AppendResult {
        let available = inbound.count - inboundOffset
        guard available > 0 else { return receivedEOF ? .closed : .needsMoreData }
        let count = min(available, buffer.count)
        inbound.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[inboundOffset..<inboundOffset + count]))
        }
        inboundOffset += count
        return .appended(count)
    }

    func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        outbound += bytes
    }

    /// Nothing to queue: closing the socket once the outbound bytes are flushed ends the stream (TCP FIN).
    func close() {}
}
