import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// How the server records the end of a connection whose peer left while a write was on its way: a write that meets a
/// stream closed in order is part of a clean close; a reset is a problem worth a line in the node's log.
@Suite struct ConnectionEndingTests {
    /// A peer that says hello and then leaves: every write after the server's hello fails with `writeError`, and the
    /// read side ends (EOF) only once such a write has failed, so the failed write always comes first.
    final class LeavingPeer: ByteStream {
        private struct State {
            var sentHello = false
            var writes = 0
            var writeFailed = false
            var reader: CheckedContinuation<[UInt8]?, Never>?
        }

        let writeError: TransportError
        private let state = Mutex(State())

        init(writeError: TransportError) { self.writeError = writeError }

        var peerIdentity: PeerIdentity? { nil }

        func read() async throws -> [UInt8]? {
            await withCheckedContinuation { continuation in
                let chunk: [UInt8]?? = state.withLock { state in
                    if !state.sentHello {
                        state.sentHello = true
                        var bytes: [UInt8] = []
                        try? FrameEncoder().encode(
                            WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
                        return .some(bytes)
                    }
                    if state.writeFailed { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let chunk { continuation.resume(returning: chunk) }
            }
        }

        func write(_ bytes: [UInt8]) async throws {
            let (fail, reader) = state.withLock { state -> (Bool, CheckedContinuation<[UInt8]?, Never>?) in
                state.writes += 1
                guard state.writes > 1 else { return (false, nil) }
                state.writeFailed = true
                let reader = state.reader
                state.reader = nil
                return (true, reader)
            }
            reader?.resume(returning: nil)
            if fail { throw writeError }
        }

        func writeIgnoringCancellation(_ bytes: [UInt8]) async throws { try await write(bytes) }

        func close() async {
            let reader = state.withLock { state in
                state.writeFailed = true
                let reader = state.reader
                state.reader = nil
                return reader
            }
            reader?.resume(returning: nil)
        }
    }

    /// The server's keepalive ping is the write that meets the closed stream.
    static func record(whenAPingMeets writeError: TransportError) async throws -> ConnectionRecord {
        let records = Mutex<[ConnectionRecord]>([])
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter,
            timers: ConnectionTimers(keepaliveInterval: .milliseconds(20), keepaliveTimeout: .seconds(60)),
            connectionLog: { record in records.withLock { $0.append(record) } })
        await server.serve(LeavingPeer(writeError: writeError))
        return try #require(records.withLock { $0.first })
    }

    @Test(.timeLimit(.minutes(3)), arguments: [TransportError.closedByPeer, .closedLocally])
    func aPingMeetingAnOrderlyCloseIsNoProblem(writeError: TransportError) async throws {
        let record = try await Self.record(whenAPingMeets: writeError)
        #expect(record.problem == nil, "\(String(describing: record.problem))")
    }

    @Test(.timeLimit(.minutes(3))) func aPingMeetingAResetIsAProblem() async throws {
        let record = try await Self.record(
            whenAPingMeets: TransportError(.io, "send failed: Connection reset by peer"))
        #expect(record.problem?.contains("write failed") == true, "\(String(describing: record.problem))")
        #expect(record.problem?.contains("Connection reset by peer") == true, "\(String(describing: record.problem))")
    }
}
