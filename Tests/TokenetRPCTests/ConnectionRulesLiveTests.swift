import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Rules of the connection protocol (Protos/README.md, sections 4 and 9) checked with raw frames against a live
/// server over mutual TLS, and against a client whose server side is raw frames.
@Suite(.serialized) struct ConnectionRulesLiveTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    static let hello = WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))
    static let clientGoAway = WireV1.Frame(
        streamID: 0, kind: .goaway(WireV1.GoAway(code: .shuttingDown, reason: "the client is closing")))

    /// The frames of a unary Echo call on `id`; a request of "slow" is answered after two seconds.
    static func call(_ id: UInt32, _ text: String = "quick") throws -> [WireV1.Frame] {
        let request = Data(try Scalars(fString: text).serializedBytes())
        return [
            WireV1.Frame(streamID: id, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))),
            WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: request))),
            WireV1.Frame(streamID: id, kind: .halfClose(WireV1.HalfClose())),
        ]
    }

    static func start(
        connectionLog: (@Sendable (ConnectionRecord) -> Void)? = nil
    ) async throws -> LiveTLSCallTests.Harness {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            if request.fString == "slow" { try await Task.sleep(for: .seconds(2)) }
            return request
        }
        return try await LiveTLSCallTests.start(router, connectionLog: connectionLog)
    }

    static func encode(_ frames: [WireV1.Frame]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { try FrameEncoder().encode(frame, into: &bytes) }
        return bytes
    }

    /// The frames `raw` receives until `done` holds or the connection ends. A peer that says nothing for `patience`
    /// ends the read too (the connection is reset), so a missing answer fails the test instead of hanging it.
    static func frames(
        from raw: TLSConnection, patience: Duration = .seconds(10),
        until done: ([WireV1.Frame]) -> Bool = { _ in false }
    ) async -> [WireV1.Frame] {
        let watchdog = Task {
            try await Task.sleep(for: patience)
            await raw.abort()
        }
        defer { watchdog.cancel() }
        var decoder = FrameDecoder()
        var frames: [WireV1.Frame] = []
        do {
            while !done(frames), let chunk = try await raw.read() {
                decoder.feed(chunk)
                while let frame = try decoder.nextFrame() { frames.append(frame) }
            }
        } catch {}
        return frames
    }

    static func goaway(in frames: [WireV1.Frame]) -> WireV1.GoAway? {
        for frame in frames { if case .goaway(let goaway)? = frame.kind { return goaway } }
        return nil
    }

    static func statuses(in frames: [WireV1.Frame]) -> [UInt32: WireV1.Status] {
        var statuses: [UInt32: WireV1.Status] = [:]
        for frame in frames { if case .status(let status)? = frame.kind { statuses[frame.streamID] = status } }
        return statuses
    }

    // MARK: - The first frame

    /// An empty frame before the hello gets the goaway of any other first frame that is not the hello. It was
    /// ignored: the hello and the ping after it were answered as if the connection had opened properly.
    @Test func aServerRefusesAnEmptyFirstFrame() async throws {
        let harness = try await Self.start()
        let raw = try await harness.raw()
        let ping = WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 7)))
        try await raw.write([0, 0, 0, 0] + Self.encode([Self.hello, ping]))
        let frames = await Self.frames(from: raw)
        let goaway = try #require(Self.goaway(in: frames), "\(frames)")
        #expect(goaway.code == .protocolError)
        #expect(goaway.reason == "the first frame must be hello")
        #expect(!frames.contains { if case .pong? = $0.kind { true } else { false } }, "\(frames)")
        await raw.close()
        await harness.stop()
    }

    /// A client whose server opens with an empty frame fails its call at once, naming the rule, instead of waiting
    /// for the call's deadline.
    @Test func aClientRefusesAnEmptyFirstFrame() async throws {
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let client = RPCClient(stream: clientEnd)
        try await serverEnd.write([0, 0, 0, 0] + Self.encode([Self.hello]))
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(Echo.unary, Scalars(fInt32: 1), options: CallOptions(timeout: .seconds(10)))
        }
        #expect(error.code == .unavailable, "\(error)")
        #expect(error.message.contains("the first frame must be hello"), "\(error)")
        await serverEnd.close()
        await client.close()
    }

    // MARK: - The peer's max_frame_size

    /// A hello announcing frames too small for the server's own statuses is refused with a goaway naming the floor.
    /// It was accepted, and the status of the call after it exceeded the client's limit.
    @Test func aServerRefusesAHelloAnnouncingTinyFrames() async throws {
        let harness = try await Self.start()
        let raw = try await harness.raw()
        let tiny = WireV1.Frame(
            streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1, settings: WireV1.Settings(maxFrameSize: 20))))
        let unknown = WireV1.Frame(streamID: 1, kind: .callStart(WireV1.CallStart(method: "/no.Such/Method")))
        try await raw.write(Self.encode([tiny, unknown]))
        let frames = await Self.frames(from: raw)
        let goaway = try #require(Self.goaway(in: frames), "\(frames)")
        #expect(goaway.code == .protocolError)
        #expect(goaway.reason == "max_frame_size 20 is below the minimum of 16384 bytes")
        #expect(Self.statuses(in: frames).isEmpty, "\(frames)")
        await raw.close()
        await harness.stop()
    }

    // MARK: - The client's goaway

    /// A call_start behind the client's goaway, with no call open, is answered UNAVAILABLE, and the server leaves the
    /// close to the client; that close is clean. The server closed at the goaway, and the call had no answer.
    @Test func aCallBehindTheClientsGoAwayIsAnswered() async throws {
        let closed = Mutex<[ConnectionRecord]>([])
        let harness = try await Self.start { record in closed.withLock { $0.append(record) } }
        let raw = try await harness.raw()
        try await raw.write(Self.encode([Self.hello, Self.clientGoAway] + Self.call(1)))
        let frames = await Self.frames(from: raw) { Self.statuses(in: $0)[1] != nil }
        let status = try #require(Self.statuses(in: frames)[1], "\(frames)")
        #expect(status.code == .unavailable)
        #expect(status.message == Self.refusal)
        #expect(Self.goaway(in: frames) == nil, "\(frames)")
        await raw.close()
        for _ in 0..<500 where closed.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(closed.withLock { $0.map(\.problem) } == [nil], "a clean close")
        await harness.stop()
    }

    /// While the client's calls run after its goaway, and after they have ended, every call_start it still sends is
    /// answered UNAVAILABLE with words about this connection (not a node shutting down), and its running call
    /// finishes.
    @Test func callsAfterTheClientsGoAwayAreAnsweredWhileItsCallsRunAndAfter() async throws {
        let harness = try await Self.start()
        let raw = try await harness.raw()
        try await raw.write(Self.encode([Self.hello] + Self.call(1, "slow")))
        try await Task.sleep(for: .milliseconds(200))
        try await raw.write(Self.encode([Self.clientGoAway] + Self.call(3)))
        var frames = await Self.frames(from: raw) { Self.statuses(in: $0).count == 2 }
        try await raw.write(Self.encode(try Self.call(5)))
        frames += await Self.frames(from: raw) { Self.statuses(in: $0)[5] != nil }
        let statuses = Self.statuses(in: frames)
        #expect(statuses[1]?.code == .ok, "the running call finishes")
        for id: UInt32 in [3, 5] {
            #expect(statuses[id]?.code == .unavailable, "call \(id): \(frames)")
            #expect(statuses[id]?.message == Self.refusal, "call \(id)")
        }
        #expect(Self.goaway(in: frames) == nil, "\(frames)")
        await raw.close()
        await harness.stop()
    }

    static let refusal = "the client sent goaway: this connection takes no new calls; retry on a new connection"
}
