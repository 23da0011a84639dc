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

    /// Fails as a TLS connection's write does once the stream is closed: `closedByPeer` after the other end closed,
    /// which the connection leaves for its reader to explain (a goaway, or a close before the hello), and
    /// `closedLocally` after this end closed. A plain error here made a write that met the peer's close race the
    /// reader's account of it.
    public func write(_ bytes: [UInt8]) async throws {
        switch outbound.write(bytes) {
        case .written: return
        case .closedByReader: throw TransportError.closedByPeer
        case .closedByWriter: throw TransportError.closedLocally
        }
    }

    /// The in-memory pipe never waits for room, so there is no write to withdraw.
    public func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        try await write(bytes)
    }

    public func close() async {
        inbound.close(by: .reader)
        outbound.close(by: .writer)
    }

    /// A one-directional queue of chunks with at most one waiting reader.
    private final class Pipe: Sendable {
        enum Side { case reader, writer }
        enum WriteOutcome { case written, closedByReader, closedByWriter }

        private struct State {
            var chunks: [[UInt8]] = []
            /// Which end closed the pipe first.
            var closedBy: Side?
            var reader: CheckedContinuation<[UInt8]?, Never>?
        }

        private let state = Mutex(State())

        func write(_ bytes: [UInt8]) -> WriteOutcome {
            state.withLock { state in
                switch state.closedBy {
                case .reader: return .closedByReader
                case .writer: return .closedByWriter
                case nil: break
                }
                if let reader = state.reader {
                    state.reader = nil
                    reader.resume(returning: bytes)
                } else {
                    state.chunks.append(bytes)
                }
                return .written
            }
        }

        func read() async -> [UInt8]? {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    if !state.chunks.isEmpty {
                        continuation.resume(returning: state.chunks.removeFirst())
                    } else if state.closedBy != nil {
                        continuation.resume(returning: nil)
                    } else {
                        state.reader = continuation
                    }
                }
            }
        }

        func close(by side: Side) {
            state.withLock { state in
                if state.closedBy == nil { state.closedBy = side }
                if let reader = state.reader {
                    state.reader = nil
                    reader.resume(returning: nil)
                }
            }
        }
    }
}
