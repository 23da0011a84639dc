import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A client that opens calls and cancels them at once, in a loop, against handlers that do not stop the moment they
/// are cancelled (cancellation is cooperative: a database transaction or a call to another node runs on).
@Suite struct CancelStormTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// Holds handlers until released, whether or not their task is cancelled.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    static func encode(_ frames: [WireV1.Frame]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in frames { try FrameEncoder().encode(frame, into: &bytes) }
        return bytes
    }

    /// The frames of a unary Echo call on `id`, cancelled right after its half-close when `cancelled`.
    static func call(_ id: UInt32, _ text: String, cancelled: Bool) throws -> [WireV1.Frame] {
        let request = Data(try Scalars(fString: text).serializedBytes())
        var frames = [
            WireV1.Frame(streamID: id, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))),
            WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: request))),
            WireV1.Frame(streamID: id, kind: .halfClose(WireV1.HalfClose())),
        ]
        if cancelled { frames.append(WireV1.Frame(streamID: id, kind: .cancel(WireV1.Cancel(reason: "storm")))) }
        return frames
    }

    /// Reads frames until a pong with `payload` (the server answers frames in order, so everything it answered
    /// before the ping has come), or until the status of call `id` when given.
    static func frames(
        from stream: InMemoryByteStream, untilPong payload: UInt64? = nil, orStatusOf id: UInt32? = nil
    ) async throws -> [WireV1.Frame] {
        var decoder = FrameDecoder()
        var frames: [WireV1.Frame] = []
        while let chunk = try await stream.read() {
            decoder.feed(chunk)
            while let frame = try decoder.nextFrame() {
                frames.append(frame)
                if case .pong(let pong)? = frame.kind, pong.payload == payload { return frames }
                if case .status? = frame.kind, frame.streamID == id { return frames }
            }
        }
        return frames
    }

    /// Cancelled calls whose handlers still run count, against an allowance of `max_concurrent_streams` such calls:
    /// past it, further calls are refused RESOURCE_EXHAUSTED until those handlers return. Cancelled calls freed their
    /// places at once, so a client that cancelled each call it opened started handlers without any bound.
    @Test(.timeLimit(.minutes(3))) func cancelledCallsCountUntilTheirHandlersReturn() async throws {
        let gate = Gate()
        let started = Atomic<Int>(0)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            if request.fString == "hold" {
                started.add(1, ordering: .relaxed)
                await gate.wait()
            }
            return request
        }
        let server = RPCServer(router: router, settings: ConnectionSettings(maxConcurrentStreams: 2))
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let serving = Task { await server.serve(serverEnd) }

        // Two calls at a time (the limit) reach their handlers, which hold, and are then cancelled: a cancel that
        // came before its handler had the request would end the handler at once (the next test), and whether it did
        // hung on scheduling.
        try await clientEnd.write(
            Self.encode([WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))]))
        for (first, second) in [(UInt32(1), UInt32(3)), (5, 7)] {
            try await clientEnd.write(
                Self.encode(
                    try Self.call(first, "hold", cancelled: false) + Self.call(second, "hold", cancelled: false)))
            let expected = Int(second + 1) / 2
            while started.load(ordering: .relaxed) < expected { try await Task.sleep(for: .milliseconds(5)) }
            let cancels = [first, second].map {
                WireV1.Frame(streamID: $0, kind: .cancel(WireV1.Cancel(reason: "storm")))
            }
            try await clientEnd.write(Self.encode(cancels))
        }
        var storm: [WireV1.Frame] = []
        for id in stride(from: UInt32(9), through: 19, by: 2) { storm += try Self.call(id, "hold", cancelled: true) }
        storm.append(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 1))))
        try await clientEnd.write(Self.encode(storm))
        let answered = try await Self.frames(from: clientEnd, untilPong: 1)
        var refused: [UInt32] = []
        for frame in answered {
            guard case .status(let status)? = frame.kind else { continue }
            #expect(status.code == .resourceExhausted, "\(status)")
            #expect(
                status.message
                    == "too many concurrent calls: the limit is 2, plus 2 calls that ended early and whose handlers "
                    + "are still stopping")
            refused.append(frame.streamID)
        }
        #expect(refused == Array(stride(from: UInt32(9), through: 19, by: 2)), "\(answered)")
        #expect(started.load(ordering: .relaxed) == 4)

        // Once the handlers return, their places are free again.
        gate.open()
        var id: UInt32 = 21
        var status: WireV1.Status?
        for _ in 0..<500 {
            try await clientEnd.write(Self.encode(Self.call(id, "quick", cancelled: false)))
            let frames = try await Self.frames(from: clientEnd, orStatusOf: id)
            for case .status(let received)? in frames.map(\.kind) { status = received }
            if status?.code == .ok { break }
            id += 2
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(status?.code == .ok, "\(String(describing: status))")
        await clientEnd.close()
        await serving.value
    }
    /// A client-streaming call whose deadline passes while its handler waits for more requests: the handler's
    /// requests end with an error, not as if the caller had sent them all (it went on to answer from part of them).
    @Test(.timeLimit(.minutes(3))) func aStreamingHandlerPastItsDeadlineDoesNotSeeItsRequestsEnd() async throws {
        let outcome = Mutex<String?>(nil)
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            var count = 0
            do {
                for try await _ in requests { count += 1 }
                outcome.withLock { $0 = "ended after \(count) request(s)" }
            } catch {
                outcome.withLock { $0 = "failed after \(count) request(s)" }
                throw error
            }
            return Scalars(fInt32: Int32(count))
        }
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let serving = Task { await server.serve(serverEnd) }
        // One request, no half-close, and a deadline of a second; nothing more comes from the client.
        let request = Data(try Scalars(fInt32: 1).serializedBytes())
        let frames = [
            WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1))),
            WireV1.Frame(
                streamID: 1,
                kind: .callStart(WireV1.CallStart(method: Echo.clientStream.path, timeoutMicros: 1_000_000))),
            WireV1.Frame(streamID: 1, kind: .message(WireV1.Message(data: request))),
        ]
        try await clientEnd.write(Self.encode(frames))
        var status: WireV1.Status?
        for case .status(let received)? in try await Self.frames(from: clientEnd, orStatusOf: 1).map(\.kind) {
            status = received
        }
        #expect(status?.code == .deadlineExceeded, "\(String(describing: status))")
        // On a machine loaded enough to pass the deadline before the handler starts, the handler never runs (nil);
        // whenever it ran, its requests failed.
        let seen = outcome.withLock { $0 }
        #expect(seen == nil || seen?.hasPrefix("failed after") == true, "\(String(describing: seen))")
        await clientEnd.close()
        await serving.value
    }

    /// A connection ends without waiting for the handlers it cancelled; its server counts them until they return,
    /// so that a node closes its database only after them (`waitForHandlers(within:)`).
    @Test(.timeLimit(.minutes(3))) func theServerCountsHandlersUntilTheyReturn() async throws {
        let gate = Gate()
        let started = Atomic<Int>(0)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            started.add(1, ordering: .relaxed)
            await gate.wait()
            return request
        }
        let server = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let serving = Task { await server.serve(serverEnd) }
        var frames = [WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))]
        frames += try Self.call(1, "hold", cancelled: false)
        try await clientEnd.write(Self.encode(frames))
        while started.load(ordering: .relaxed) < 1 { try await Task.sleep(for: .milliseconds(5)) }
        // The connection goes, and its call with it; the handler, which does not stop when cancelled, runs on.
        await clientEnd.close()
        await serving.value
        #expect(server.connectionCount == 0)
        #expect(server.handlerCount == 1)
        #expect(await server.waitForHandlers(within: .milliseconds(50)) == false)
        gate.open()
        #expect(await server.waitForHandlers(within: .seconds(120)))
        #expect(server.handlerCount == 0)
    }

    /// A paused (or slow) node read a call, its request and the caller's cancel in one go, then ran the handler: a
    /// TSP changed a token for a wallet that had been told DEADLINE_EXCEEDED. A call cancelled before its handler
    /// has its request is not handled. Handlers run on the connection's loop here, so none starts before the loop
    /// has read the whole burst, cancels included: the outcome does not hang on scheduling.
    @Test(.timeLimit(.minutes(3))) func aCallCancelledBeforeItsHandlerHasItsRequestIsNotHandled() async throws {
        let handled = Atomic<Int>(0)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            handled.add(1, ordering: .relaxed)
            return request
        }
        let loop = try EventLoop(name: "cancel-before-handler")
        defer { loop.shutdown() }
        let listener = try await PlainListener.bind(on: loop)
        let server = RPCServer(router: router, handlersOnConnectionLoop: true)
        let serving = Task { await server.serve(listener: listener) }
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)

        var burst = [WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))]
        for id in stride(from: UInt32(1), through: 39, by: 2) { burst += try Self.call(id, "late", cancelled: true) }
        burst += try Self.call(41, "on time", cancelled: false)
        try await client.write(Self.encode(burst))
        var decoder = FrameDecoder()
        var statuses: [UInt32: WireV1.Status] = [:]
        while statuses[41] == nil, let chunk = try await client.read() {
            decoder.feed(chunk)
            while let frame = try decoder.nextFrame() {
                if case .status(let status)? = frame.kind { statuses[frame.streamID] = status }
            }
        }
        #expect(statuses[41]?.code == .ok, "\(statuses)")
        #expect(handled.load(ordering: .relaxed) == 1, "only the call that was not cancelled is handled")
        await client.close()
        server.shutdown()
        await listener.close()
        serving.cancel()
    }
}
