import Synchronization
import TokenetTransport

/// One end of an in-memory byte pipe. `pair` returns two connected ends.
///
/// Chunks keep their boundaries, so tests see the same frame splitting a socket could produce only when they write
/// it that way; the frame decoder's own tests cover arbitrary splits.
public final class InMemoryByteStream: ByteStream {
    public let peerIdentity: PeerIdentity?
    private let inbound: Pipe
    private let outbound: Pipe

    private init(peerIdentity: PeerIdentity?, inbound: Pipe, outbound: Pipe) {
        self.peerIdentity = peerIdentity
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Two connected ends. Each end reports the other side's identity as its peer.
    public static func pair(
        client: PeerIdentity? = nil,
        server: PeerIdentity? = nil
    ) -> (client: InMemoryByteStream, server: InMemoryByteStream) {
        let toServer = Pipe()
        let toClient = Pipe()
        return (
            InMemoryByteStream(peerIdentity: server, inbound: toClient, outbound: toServer),
            InMemoryByteStream(peerIdentity: client, inbound: toServer, outbound: toClient)
        )
    }

    public func read() async throws -> [UInt8]? {
        await inbound.read()
    }

    public func write(_ bytes: [UInt8]) async throws {
        guard outbound.write(bytes) else { throw RPCError(.unavailable, "the in-memory stream is closed") }
    }

    /// The in-memory pipe never waits for room, so there is no write to withdraw.
    public func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        try await write(bytes)
    }

    public func close() async {
        inbound.close()
        outbound.close()
    }

    /// A one-directional queue of chunks with at most one waiting reader.
    private final class Pipe: Sendable {
        private struct State {
            var chunks: [[UInt8]] = []
            var closed = false
            var reader: CheckedContinuation<[UInt8]?, Never>?
        }

        private let state = Mutex(State())

        func write(_ bytes: [UInt8]) -> Bool {
            state.withLock { state in
                guard !state.closed else { return false }
                if let reader = state.reader {
                    state.reader = nil
                    reader.resume(returning: bytes)
                } else {
                    state.chunks.append(bytes)
                }
                return true
            }
        }

        func read() async -> [UInt8]? {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    if !state.chunks.isEmpty {
                        continuation.resume(returning: state.chunks.removeFirst())
                    } else if state.closed {
                        continuation.resume(returning: nil)
                    } else {
                        state.reader = continuation
                    }
                }
            }
        }

        func close() {
            state.withLock { state in
                state.closed = true
                if let reader = state.reader {
                    state.reader = nil
                    reader.resume(returning: nil)
                }
            }
        }
    }
}
