import Foundation
import Testing
import TokenetWire

@testable import TokenetRPC
@testable import TokenetTransport

/// A client that sends requests without their half-close: the requests a server holds for such calls are bounded
/// across its connections (`RPCConnection+RequestBudget.swift`).
@Suite struct RequestBudgetTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// Past the budget, the calls of the connection that holds it are refused RESOURCE_EXHAUSTED, while a small call
    /// on another connection is answered; once that connection closes, nothing is held. Without the budget every such
    /// call kept its request (about 2 MiB of memory per 1 MiB request) for as long as the client liked. A request
    /// counts as that memory: twice its size, since it may stay in received bytes up to twice as large.
    @Test(.timeLimit(.minutes(3))) func requestsWithoutTheirHalfCloseHaveABudget() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        server.requestBudget.limit = 1 << 20
        let (holderEnd, holderServerEnd) = InMemoryByteStream.pair()
        let holding = Task { await server.serve(holderServerEnd) }

        var frames = [WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))]
        let request = Data(try Scalars(fBytes: Data(count: 100_000)).serializedBytes())
        let ids = Array(stride(from: UInt32(1), through: 39, by: 2))
        for id in ids {
            frames.append(WireV1.Frame(streamID: id, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))))
            frames.append(WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: request))))
        }
        frames.append(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 1))))
        try await holderEnd.write(CancelStormTests.encode(frames))
        let answered = try await CancelStormTests.frames(from: holderEnd, untilPong: 1)
        var refused: [UInt32] = []
        for frame in answered {
            guard case .status(let status)? = frame.kind else { continue }
            #expect(status.code == .resourceExhausted, "\(status)")
            #expect(status.message.contains("bytes of requests from calls that have not ended their requests"))
            refused.append(frame.streamID)
        }
        // Five requests of 100,004 bytes, counted as 200,008 each, fit in 1 MiB; each one after them is refused.
        #expect(refused == Array(ids.dropFirst(5)), "\(answered)")
        #expect(server.requestBudget.total <= 1 << 20)

        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let serving = Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        #expect(try await client.unary(Echo.unary, Scalars(fInt32: 1)).fInt32 == 2)
        await client.close()
        await serving.value

        await holderEnd.close()
        await holding.value
        #expect(server.requestBudget.total == 0)
    }

    /// A connection that held a megabyte or more of requests asks for the heap to be trimmed when it ends, as one
    /// that held large outbound buffers does: after such a peer had gone, a node stayed at its peak size (236 MB
    /// against 39 MB before, idle, with every connection closed).
    @Test(.timeLimit(.minutes(3))) func aConnectionThatHeldLargeRequestsTrimsTheHeapWhenItEnds() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let (holderEnd, holderServerEnd) = InMemoryByteStream.pair()
        let holding = Task { await server.serve(holderServerEnd) }
        var frames = [WireV1.Frame(streamID: 0, kind: .hello(WireV1.Hello(protocolVersion: 1)))]
        let request = Data(try Scalars(fBytes: Data(count: 300_000)).serializedBytes())
        for id in stride(from: UInt32(1), through: 5, by: 2) {
            frames.append(WireV1.Frame(streamID: id, kind: .callStart(WireV1.CallStart(method: Echo.unary.path))))
            frames.append(WireV1.Frame(streamID: id, kind: .message(WireV1.Message(data: request))))
        }
        frames.append(WireV1.Frame(streamID: 0, kind: .ping(WireV1.Ping(payload: 1))))
        try await holderEnd.write(CancelStormTests.encode(frames))
        _ = try await CancelStormTests.frames(from: holderEnd, untilPong: 1)
        let before = Heap.trimsAsked.load(ordering: .relaxed)
        await holderEnd.close()
        await holding.value
        #expect(Heap.trimsAsked.load(ordering: .relaxed) > before)
    }
}
