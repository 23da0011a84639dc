import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// The server's call log reports what each caller was told: also for calls the runtime answered itself, before a
/// handler started (too many calls) or while one ran (a message after the end of the requests). The first had no
/// line at all, the second the handler's CANCELLED.
@Suite struct CallLogTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    static let hello = WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))

    static func frames(_ frames: [WireV1.Frame]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { try FrameEncoder().encode(frame, into: &bytes) }
        return bytes
    }

    /// The records logged, once `count` are in (or ten seconds have passed).
    static func records(_ log: borrowing Mutex<[CallRecord]>, count: Int) async throws -> [CallRecord] {
        for _ in 0..<1000 where log.withLock({ $0.count }) < count { try await Task.sleep(for: .milliseconds(10)) }
        return log.withLock { $0 }
    }

    @Test func callsTheRuntimeAnsweredAreLoggedWithWhatTheCallerWasTold() async throws {
        let log = Mutex<[CallRecord]>([])
        let release = AsyncStream<Void>.makeStream()
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            if request.fString == "hold" { for await _ in release.stream {} }
            return request
        }
        let server = RPCServer(
            router: router, settings: ConnectionSettings(maxConcurrentStreams: 1),
            callLog: { record in log.withLock { $0.append(record) } })
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .wallet, nodeID: "wallet-1"), server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let serving = Task { await server.serve(serverEnd) }
        defer { serving.cancel() }
        let hold = Data(try Scalars(fString: "hold").serializedBytes())
        let quick = Data(try Scalars(fString: "quick").serializedBytes())
        var traced = WireV1.CallStart(method: Echo.unary.path)
        traced.metadata = [WireV1.MetadataEntry(key: "tokenet-trace-id", value: .text("0ff1ce0ff1ce0ff"))]
        // Call 1 holds the one slot; call 3 is refused for it; call 5, sent once 1 is over, breaks the call protocol
        // with a message after its half-close while its handler runs.
        try await clientEnd.write(
            try Self.frames([
                Self.hello,
                WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))),
                WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: hold))),
                WireV1.Frame(streamID: 1, kind: .halfClose(WireV1.HalfClose())),
                WireV1.Frame(streamID: 3, kind: .callStart(traced)),
            ]))
        let refused = try #require(try await Self.records(log, count: 1).first)
        #expect(refused.method == Echo.unary.path)
        #expect(refused.code == .resourceExhausted)
        #expect(refused.message == "too many concurrent calls: the limit is 1")
        #expect(refused.traceID == "0ff1ce0ff1ce0ff")
        #expect(refused.peer == PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        release.continuation.finish()
        #expect(try await Self.records(log, count: 2).last?.code == .ok)
        try await clientEnd.write(
            try Self.frames([
                WireV1.Frame(streamID: 5, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))),
                WireV1.Frame(streamID: 5, kind: .message(WireV1.Message(data: quick))),
                WireV1.Frame(streamID: 5, kind: .halfClose(WireV1.HalfClose())),
                WireV1.Frame(streamID: 5, kind: .message(WireV1.Message(data: quick))),
            ]))
        let records = try await Self.records(log, count: 3)
        #expect(records.count == 3, "\(records)")
        // Answered in the same read as its request, the call may have been ended before its handler ran, or while it
        // did: either way the log says what the caller got.
        #expect(records.last?.code == .internal, "\(records)")
        #expect(records.last?.message == "message received after the end of requests", "\(records)")
        // A call refused for its metadata is logged under the trace id its caller sent, when that one is valid.
        var refusedForMetadata = WireV1.CallStart(method: Echo.unary.path)
        refusedForMetadata.metadata = [
            WireV1.MetadataEntry(key: "tokenet-trace-id", value: .text("0ff1ce0ff1ce0ff")),
            WireV1.MetadataEntry(key: "note", value: .text("two\nlines")),
        ]
        try await clientEnd.write(
            try Self.frames([
                WireV1.Frame(streamID: 7, kind: .callStart(refusedForMetadata)),
                WireV1.Frame(streamID: 7, kind: .message(WireV1.Message(data: quick))),
                WireV1.Frame(streamID: 7, kind: .halfClose(WireV1.HalfClose())),
            ]))
        let all = try await Self.records(log, count: 4)
        #expect(all.last?.code == .invalidArgument, "\(all)")
        #expect(all.last?.traceID == "0ff1ce0ff1ce0ff", "\(all)")
        await clientEnd.close()
    }

    /// A stream the server ends as it shuts down is logged with what its caller was told, UNAVAILABLE, and marked as
    /// ended by the shutdown: a node at info writes no "call failed" line for each subscriber at every clean stop.
    @Test(.timeLimit(.minutes(3))) func aStreamEndedByTheShutdownIsMarkedSo() async throws {
        let log = Mutex<[CallRecord]>([])
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { _, writer, _ in
            try await writer.send(Scalars(fInt32: 1))
            try await Task.sleep(for: .seconds(3600))
        }
        let (server, client, serving) = InMemoryCallTests.connect(
            router, callLog: { record in log.withLock { $0.append(record) } })
        var responses = try await client.serverStreaming(Echo.serverStream, Scalars()).makeAsyncIterator()
        #expect(try await responses.next()?.fInt32 == 1)
        server.shutdown()
        await #expect(throws: RPCError.self) { _ = try await responses.next() }
        await serving.value
        let records = try await Self.records(log, count: 1)
        #expect(records.count == 1, "\(records)")
        #expect(records.first?.code == .unavailable)
        #expect(records.first?.endedByShutdown == true)
    }
}
