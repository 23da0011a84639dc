import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// When frames encoded on the connection's loop leave: at once for a lone caller, in batches of about
/// `earlyFlushBytes` when many callers run in one loop iteration, never one write per call nor one per iteration.
@Suite struct LoopFlushTests {
    /// A stream on a real event loop that records every batch handed to `writeOnLoop` and accepts it at once.
    final class RecordingStream: ByteStream {
        let eventLoop: EventLoop
        let batches = Mutex<[Int]>([])
        private let pipe = InMemoryByteStream.pair()

        init(loop: EventLoop) { eventLoop = loop }

        var peerIdentity: PeerIdentity? { nil }
        var loop: EventLoop? { eventLoop }
        func read() async throws -> [UInt8]? { try await pipe.client.read() }
        func write(_ bytes: [UInt8]) async throws { batches.withLock { $0.append(bytes.count) } }
        func writeIgnoringCancellation(_ bytes: [UInt8]) async throws { try await write(bytes) }
        func close() async { await pipe.client.close() }

        func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
            #expect(eventLoop.inEventLoop)
            batches.withLock { $0.append(bytes.count) }
            completion(.success(()))
        }
    }

    static func connection(on loop: EventLoop) -> (RPCConnection, RecordingStream) {
        let stream = RecordingStream(loop: loop)
        let connection = RPCConnection(
            stream: stream, role: .client, settings: ConnectionSettings(maxConcurrentStreams: 1000), handler: nil)
        // The server has greeted it: a call's messages wait for the server's hello.
        let hello = WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))
        connection.core.withLock { #expect($0.machine.receive(hello) == []) }
        return (connection, stream)
    }

    /// Opens one unary call's frames and flushes them as `RPCClient.unary` does.
    static func call(_ connection: RPCConnection, size: Int = 100) async throws {
        _ = try connection.openCall(
            method: "/tokenet.testing.v1.Echo/Unary", metadata: Metadata(), timeout: nil,
            onlyRequest: .serialized(Data(repeating: 7, count: size)), callerFlushes: true)
        await connection.flushNow()
    }

    @Test func aLoneCallersFramesLeaveBeforeItsFlushReturns() async throws {
        let loop = try EventLoop(name: "flush-test")
        defer { loop.shutdown() }
        let (connection, stream) = Self.connection(on: loop)
        let counts = try await Task(executorPreference: loop) {
            var counts: [Int] = []
            for _ in 0..<3 {
                try await Self.call(connection)
                counts.append(stream.batches.withLock { $0.count })
            }
            return counts
        }.value
        // Nothing else is queued on the loop, so each call is written by its own flush, not after the task ends.
        #expect(counts == [1, 2, 3])
    }

    @Test func manyCallersInOneIterationShareWritesOfAboutTwoKilobytes() async throws {
        let loop = try EventLoop(name: "flush-test")
        defer { loop.shutdown() }
        let (connection, stream) = Self.connection(on: loop)
        let callers = 64
        // The 64 tasks are created by one job on the loop, so they run one after the other in the next iteration's
        // batch, as the callers resumed by one read do.
        try await Task(executorPreference: loop) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<callers {
                    group.addTask(executorPreference: loop) { try await Self.call(connection) }
                }
                try await group.waitForAll()
            }
        }.value
        let batches = stream.batches.withLock { $0 }
        let total = batches.reduce(0, +)
        #expect(total > callers * 100, "every call's frames were written")
        #expect(batches.count > 1, "a burst does not wait for the end of the iteration: \(batches)")
        #expect(batches.count < callers / 4, "callers share writes: \(batches)")
        for size in batches.dropLast() {
            #expect(size >= RPCConnection.earlyFlushBytes, "only the last write of a burst is short: \(batches)")
        }
    }

    @Test func largeMessagesLeaveSeveralToAWrite() async throws {
        let loop = try EventLoop(name: "flush-test")
        defer { loop.shutdown() }
        let (connection, stream) = Self.connection(on: loop)
        let callers = 16
        let size = 16 * 1024
        try await Task(executorPreference: loop) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<callers {
                    group.addTask(executorPreference: loop) { try await Self.call(connection, size: size) }
                }
                try await group.waitForAll()
            }
        }.value
        let batches = stream.batches.withLock { $0 }
        #expect(batches.reduce(0, +) > callers * size, "every call's frames were written")
        #expect(batches.count > 1, "a burst does not wait for the end of the iteration: \(batches)")
        // Each 16 KiB request is far above `earlyFlushBytes`, yet requests share writes of about 64 KiB.
        #expect(batches.count <= callers / 3, "large messages share writes: \(batches)")
        for written in batches.dropLast() {
            #expect(
                written >= RPCConnection.earlyFlushLargeBytes, "only the last write of a burst is short: \(batches)")
        }
    }
}
