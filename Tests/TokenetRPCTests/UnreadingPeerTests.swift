import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A peer that floods frames the server must answer (pings here; calls past the concurrency limit are the same)
/// while it reads nothing: the answers are written without waiting for room, so the server ends the connection
/// once `ConnectionSettings.unreadOutboundLimit` bytes of them wait, instead of holding more for as long as the peer
/// keeps sending.
@Suite(.timeLimit(.minutes(2))) struct UnreadingPeerTests {
    @Test func aPingFloodThatReadsNothingEndsItsConnection() async throws {
        let loop = try EventLoop(name: "rpc-unreading-peer")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let records = Mutex<[ConnectionRecord]>([])
        // A limit of 256 KiB (8 MiB by default) keeps the flood this test needs short; the grace (10 s by default)
        // is how long the goaway may take to leave before the connection is reset.
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter, settings: ConnectionSettings(unreadOutboundLimit: 256 * 1024),
            timers: ConnectionTimers(stuckWriteGrace: .seconds(1)),
            connectionLog: { record in records.withLock { $0.append(record) } })
        let serving = Task { await server.serve(listener: listener) }
        let raw = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)

        let encoder = FrameEncoder()
        var hello: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &hello)
        var pings: [UInt8] = []
        for index in 1...10_000 {
            let ping = WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: UInt64(index))))
            try encoder.encode(ping, into: &pings)
        }
        // Up to 20 million pings (some 300 MB); the server ends the connection long before, and the writes fail.
        let flood = Task { [hello, pings] in
            try await raw.write(hello)
            for _ in 0..<2_000 { try await raw.write(pings) }
        }
        let problem = try await Self.firstProblem(records)
        #expect(
            problem?.contains("the peer keeps sending but reads nothing") == true,
            "\(String(describing: problem))")
        flood.cancel()
        await raw.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }

    /// A peer that trickles a frame a byte at a time is never silent, so keepalive never ends its connection; the
    /// frame must arrive whole within the keepalive interval and timeout, or the connection ends.
    @Test func aFrameTrickledByteByByteRunsOutOfTime() async throws {
        let loop = try EventLoop(name: "rpc-trickling-peer")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let records = Mutex<[ConnectionRecord]>([])
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter,
            timers: ConnectionTimers(
                keepaliveInterval: .milliseconds(300), keepaliveTimeout: .milliseconds(300),
                stuckWriteGrace: .seconds(1)),
            connectionLog: { record in records.withLock { $0.append(record) } })
        let serving = Task { await server.serve(listener: listener) }
        let raw = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        let encoder = FrameEncoder()
        var hello: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &hello)
        try await raw.write(hello)
        // A frame of a megabyte announced, then one byte every 100 ms: more often than the keepalive asks.
        let trickle = Task {
            try await raw.write([0, 0x10, 0, 0])
            while !Task.isCancelled {
                try await raw.write([0])
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let problem = try await Self.firstProblem(records)
        #expect(
            problem?.contains("a frame that began to arrive 0.6 seconds ago is still incomplete") == true,
            "\(String(describing: problem))")
        trickle.cancel()
        await raw.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }

    /// Peers that each send most of a large frame and stop: past the server's budget of unfinished frames (1 MiB
    /// here, 256 MiB by default), the connection that adds to it is closed, and the others, and new calls, go on.
    @Test func unfinishedFramesAcrossConnectionsHaveABudget() async throws {
        let loop = try EventLoop(name: "rpc-inbound-budget")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let records = Mutex<[ConnectionRecord]>([])
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter, timers: ConnectionTimers(stuckWriteGrace: .seconds(1)),
            connectionLog: { record in records.withLock { $0.append(record) } })
        server.inboundBudget.limit = 1 << 20
        let serving = Task { await server.serve(listener: listener) }
        let encoder = FrameEncoder()
        var hello: [UInt8] = []
        try encoder.encode(WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &hello)
        // A 4 MiB frame announced, 700 KiB of it sent.
        let partial = hello + [0, 0x40, 0, 0] + [UInt8](repeating: 0, count: 700 * 1024)

        let first = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        try await first.write(partial)
        for _ in 0..<3_000 where server.inboundBudget.total < 700 * 1024 + 4 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.inboundBudget.total == 700 * 1024 + 4)  // with its length prefix
        let second = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        try await second.write(partial)
        let problem = try await Self.firstProblem(records)
        #expect(
            problem?.contains("this side holds more than 1048576 bytes of unfinished frames from its peers") == true,
            "\(String(describing: problem))")
        // The first peer's frame is still held, and a call on a new connection is answered.
        #expect(server.inboundBudget.total == 700 * 1024 + 4)  // with its length prefix
        let client = RPCClient(
            stream: try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop))
        let answer = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1))
        #expect(answer.fInt32 == 2)
        await client.close()
        await first.close()
        for _ in 0..<3_000 where server.inboundBudget.total > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.inboundBudget.total == 0, "a connection that ends gives its bytes back")
        await second.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }

    /// The problem of the first connection the server logged as ended (nil for a clean end), waiting up to 90 s.
    static func firstProblem(_ records: borrowing Mutex<[ConnectionRecord]>) async throws -> String? {
        for _ in 0..<9_000 {
            if let record = records.withLock({ $0.first }) { return record.problem }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}
