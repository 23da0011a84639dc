import Foundation
import Synchronization
import Testing
import TokenetWire

@testable import TokenetRPC
@testable import TokenetTransport

/// Peers that would hold a server's memory: one that floods frames the server must answer (pings here; calls past
/// the concurrency limit are the same) while it reads nothing, one that trickles a frame and never finishes it, and
/// many that each leave most of a large frame unfinished.
@Suite(.timeLimit(.minutes(3))) struct UnreadingPeerTests {
    /// The answers to a flood are written without waiting for room, so the server ends the connection once
    /// `ConnectionSettings.unreadOutboundLimit` bytes of them wait, instead of holding more for as long as the peer
    /// keeps sending.
    @Test func aPingFloodThatReadsNothingEndsItsConnection() async throws {
        // A limit of 256 KiB (8 MiB by default) keeps the flood this test needs short.
        let harness = try await Harness(
            name: "rpc-unreading-peer",
            settings: ConnectionSettings(unreadOutboundLimit: 256 * 1024, workFreeFrameBurst: Self.unlimitedPings))
        let problem = try await Self.floodWithPings(harness)
        #expect(
            problem?.contains("the peer keeps sending but reads nothing") == true,
            "\(String(describing: problem))")
        await harness.stop()
    }

    /// Pings past any flood the tests send: these tests are about the answers that wait, not about the pings'
    /// own limit (`FloodedPingTests`).
    static let unlimitedPings = 1 << 40

    /// Floods `harness`'s server with pings from a peer that reads nothing, and returns the problem its connection
    /// ended with.
    static func floodWithPings(_ harness: Harness) async throws -> String? {
        let raw = try await harness.connect()
        let encoder = FrameEncoder()
        var pings: [UInt8] = []
        for index in 1...10_000 {
            let ping = WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: UInt64(index))))
            try encoder.encode(ping, into: &pings)
        }
        // Up to 20 million pings (some 300 MB); the server ends the connection long before, and the writes fail.
        let flood = Task { [pings] in
            try await raw.write(try Self.hello())
            for _ in 0..<2_000 { try await raw.write(pings) }
        }
        let problem = try await harness.firstProblem()
        flood.cancel()
        await raw.close()
        return problem
    }

    /// A connection ended for a peer that read nothing held a megabyte or more of frames for it: the heap is trimmed,
    /// as after other large buffers. The node kept its peak size after such a peer had gone (64 MB against 46 MB), as
    /// what waited for the peer had left the connection's buffer for the write the reset failed.
    @Test func aPingFloodPastAMegabyteTrimsTheHeapWhenItsConnectionEnds() async throws {
        let harness = try await Harness(
            name: "rpc-unreading-trim",
            settings: ConnectionSettings(unreadOutboundLimit: 2 * 1024 * 1024, workFreeFrameBurst: Self.unlimitedPings))
        let trimsAsked = Heap.trimsAsked.load(ordering: .relaxed)
        let problem = try await Self.floodWithPings(harness)
        #expect(
            problem?.contains("the peer keeps sending but reads nothing") == true,
            "\(String(describing: problem))")
        #expect(Heap.trimsAsked.load(ordering: .relaxed) > trimsAsked)
        await harness.stop()
    }

    /// A peer that trickles a frame a byte at a time is never silent, so keepalive never ends its connection; the
    /// frame must arrive whole within the keepalive interval and timeout, or the connection ends.
    @Test func aFrameTrickledByteByByteRunsOutOfTime() async throws {
        let harness = try await Harness(
            name: "rpc-trickling-peer",
            timers: ConnectionTimers(
                keepaliveInterval: .seconds(1), keepaliveTimeout: .seconds(1), stuckWriteGrace: .seconds(1)))
        let raw = try await harness.connect()
        // The hello and the length prefix of a frame of a megabyte in one write, then one byte every 50 ms, far more
        // often than the keepalive asks.
        try await raw.write(try Self.hello() + [0, 0x10, 0, 0])
        let trickle = Task {
            while !Task.isCancelled {
                try await raw.write([0])
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        // A loaded run whose sleeps stretch past the 1 s interval draws a ping, which a peer in the middle of a
        // frame cannot answer, and that ping may then run out first: the time the server's timer woke late is not
        // charged to the peer, and the frame's clock, started earlier, has been forgiven more of it. Such a run
        // ends the connection for the ping; one that drew none must end it for the frame.
        let pinged = Task {
            var decoder = FrameDecoder()
            while let chunk = try await raw.read() {
                decoder.feed(chunk)
                while let frame = try decoder.nextFrame() {
                    if case .ping = frame.kind { return true }
                }
            }
            return false
        }
        let problem = try await harness.firstProblem()
        let frameDiagnosis = "a frame that began to arrive 2.0 seconds ago is still incomplete"
        if problem?.contains(frameDiagnosis) != true {
            #expect(problem == "no answer to keepalive ping", "\(String(describing: problem))")
            #expect(try await pinged.value, "the server ended the connection for a ping it never sent")
        }
        trickle.cancel()
        await raw.close()
        await harness.stop()
    }

    /// Peers that each send most of a large frame and stop: past the server's budget of unfinished frames (1 MiB
    /// here, 256 MiB by default), the connection that adds to it is closed, and the others, and new calls, go on.
    @Test func unfinishedFramesAcrossConnectionsHaveABudget() async throws {
        let harness = try await Harness(name: "rpc-inbound-budget")
        let budget = harness.server.inboundBudget
        budget.limit = 1 << 20
        // A 4 MiB frame announced, 700 KiB of it sent: with the hello's and its own length prefix, it holds
        // 700 KiB + 4 bytes.
        let partial = try Self.hello() + [0, 0x40, 0, 0] + [UInt8](repeating: 0, count: 700 * 1024)
        let held = 700 * 1024 + 4

        let first = try await harness.connect()
        try await first.write(partial)
        for _ in 0..<3_000 where budget.total < held { try await Task.sleep(for: .milliseconds(10)) }
        #expect(budget.total == held)
        let second = try await harness.connect()
        try await second.write(partial)
        let problem = try await harness.firstProblem()
        #expect(
            problem?.contains("this side holds more than 1048576 bytes of unfinished frames from its peers") == true,
            "\(String(describing: problem))")
        // The first peer's frame is still held, and a call on a new connection is answered.
        #expect(budget.total == held)
        let client = RPCClient(stream: try await harness.connect())
        let answer = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1))
        #expect(answer.fInt32 == 2)
        await client.close()
        await first.close()
        for _ in 0..<3_000 where budget.total > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(budget.total == 0, "a connection that ends gives its bytes back")
        await second.close()
        await harness.stop()
    }

    /// Peers that flood calls while reading nothing, each below its own limit: past the server's budget of frames
    /// waiting for such peers (128 MiB by default), the connection that adds to it is closed, and the others, and
    /// new calls, go on.
    @Test func framesForPeersThatReadNothingHaveABudget() async throws {
        let harness = try await Harness(name: "rpc-unread-budget")
        let budget = harness.server.unreadBudget
        // Calls of a method the server does not have, each answered at once with an UNIMPLEMENTED status that
        // names it: some 300 bytes an answer, where a pong is 13, so the flood takes a twentieth of the frames.
        let method = "/tokenet.testing.v1.Nothing/" + String(repeating: "x", count: 220)
        func calls(from first: UInt32) throws -> [UInt8] {
            var bytes: [UInt8] = []
            for id in stride(from: first, to: first + 1_000, by: 2) {
                try FrameEncoder().encode(
                    WireV1.Frame(streamID: id, kind: .callStart(WireV1.CallStart(method: method))), into: &bytes)
                try FrameEncoder().encode(
                    WireV1.Frame(streamID: id, kind: .halfClose(WireV1.HalfClose())), into: &bytes)
            }
            return bytes
        }
        // The first peer floods until the server counts answers waiting for it (which it does past the 1 MiB
        // high-water mark; its own limit is 8 MiB), then stops, and the count settles.
        let first = try await harness.connect()
        try await first.write(try Self.hello())
        var nextID: UInt32 = 1
        for _ in 0..<2_000 where budget.total == 0 {
            try await first.write(try calls(from: nextID))
            nextID += 1_000
        }
        #expect(budget.total > RPCConnection.outboundHighWater)
        // Settled once the same for ten samples in a row (2 s): two equal samples 200 ms apart were a server
        // starved of its turn for that long, which then answered more of the first peer's calls past the limit.
        var settled = -1
        var steady = 0
        for _ in 0..<300 where steady < 10 {
            let total = budget.total
            steady = total == settled ? steady + 1 : 0
            settled = total
            try await Task.sleep(for: .milliseconds(200))
        }
        budget.limit = settled + 256 * 1024

        // The second peer's flood takes the total past the budget as soon as it counts, with 1 MiB waiting.
        let second = try await harness.connect()
        let flood = Task {
            try await second.write(try Self.hello())
            var nextID: UInt32 = 1
            for _ in 0..<2_000 {
                try await second.write(try calls(from: nextID))
                nextID += 1_000
            }
        }
        let problem = try await harness.firstProblem()
        #expect(
            problem?.contains("reads too little") == true
                && problem?.contains("this side holds more than \(settled + 256 * 1024) bytes for peers") == true,
            "\(String(describing: problem))")
        flood.cancel()
        // The first peer's pongs still count, and a call on a new connection is answered.
        #expect(budget.total >= settled)
        #expect(harness.records.ended.withLock { $0.count } == 1)
        let client = RPCClient(stream: try await harness.connect())
        let answer = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1))
        #expect(answer.fInt32 == 2)
        await client.close()
        await first.close()
        await second.close()
        for _ in 0..<3_000 where budget.total > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(budget.total == 0, "a connection that ends gives its bytes back")
        await harness.stop()
    }

    /// A plaintext echo server on loopback that records how each of its connections ended. Its closing
    /// connections are reset 1 s after they begin to close (10 s by default) when the peer takes nothing more.
    final class Harness: Sendable {
        final class Records: Sendable {
            let ended = Mutex<[ConnectionRecord]>([])
        }

        let loop: EventLoop
        let listener: PlainListener
        let server: RPCServer
        let serving: Task<Void, Never>
        let records = Records()

        init(
            name: String, settings: ConnectionSettings = .defaults,
            timers: ConnectionTimers = ConnectionTimers(stuckWriteGrace: .seconds(1))
        ) async throws {
            loop = try EventLoop(name: name)
            let listener = try await PlainListener.bind(on: loop)
            let records = records
            let server = RPCServer(
                router: InMemoryCallTests.echoRouter, settings: settings, timers: timers,
                connectionLog: { record in records.ended.withLock { $0.append(record) } })
            self.listener = listener
            self.server = server
            serving = Task { await server.serve(listener: listener) }
        }

        func connect() async throws -> PlainConnection {
            try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
        }

        /// The problem of the first connection the server logged as ended (nil for a clean end), waiting up to 90 s.
        func firstProblem() async throws -> String? {
            for _ in 0..<9_000 {
                if let record = records.ended.withLock({ $0.first }) { return record.problem }
                try await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }

        func stop() async {
            server.shutdown()
            await listener.close()
            serving.cancel()
            loop.shutdown()
        }
    }

    static func hello() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try FrameEncoder().encode(
            WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))), into: &bytes)
        return bytes
    }
}
