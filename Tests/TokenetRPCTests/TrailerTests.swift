import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A handler's trailers (`ServerContext.addTrailer`) travel with the call's status, whatever its outcome, and reach
/// the caller's `CallOptions.onTrailers`.
@Suite struct TrailerTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    static var router: RPCRouter {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, context in
            try context.addTrailer("decided-by", .text("rule-\(request.fInt32)"))
            try context.addTrailer("X-Score-Bin", .binary(Data([1, 2, 3])))
            if request.fString == "fail" { throw RPCError(.failedPrecondition, "declined") }
            if request.fString == "reserved" { try context.addTrailer("tokenet-trace-id", .text("x")) }
            if request.fString == "control" { try context.addTrailer("note", .text("a\nb")) }
            return request
        }
        router.serverStreaming(Echo.serverStream) { request, writer, context in
            for index in 0..<Int(request.fUint32) { try await writer.send(Scalars(fInt32: Int32(index))) }
            try context.addTrailer("sent", .text("\(request.fUint32)"))
        }
        return router
    }

    /// Records what `onTrailers` is given.
    final class Received: Sendable {
        let calls = Mutex<[Metadata]>([])
        var options: CallOptions {
            var options = CallOptions()
            options.onTrailers = { [self] trailers in calls.withLock { $0.append(trailers) } }
            return options
        }
        var last: [(key: String, value: Metadata.Entry)] { calls.withLock { $0.last?.entries ?? [] } }
    }

    @Test func trailersComeWithAnOKStatusAndWithAnError() async throws {
        let (_, client, _) = InMemoryCallTests.connect(Self.router)
        let received = Received()
        _ = try await client.unary(Echo.unary, Scalars(fInt32: 7), options: received.options)
        #expect(received.calls.withLock { $0.count } == 1)
        #expect(received.last.map(\.key) == ["decided-by", "x-score-bin"])
        #expect(received.last.map(\.value) == [.text("rule-7"), .binary(Data([1, 2, 3]))])

        let error = await #expect(throws: RPCError.self) {
            try await client.unary(Echo.unary, Scalars(fInt32: 8, fString: "fail"), options: received.options)
        }
        #expect(error?.code == .failedPrecondition)
        #expect(received.last.map(\.value).first == .text("rule-8"))

        let streamed = Received()
        var count = 0
        for try await _ in try await client.serverStreaming(
            Echo.serverStream, Scalars(fUint32: 3), options: streamed.options)
        {
            count += 1
        }
        #expect(count == 3)
        #expect(streamed.last.map(\.key) == ["sent"])
        #expect(streamed.last.map(\.value) == [.text("3")])
    }

    /// The runtime's prefix and a control character in a text value are a handler's mistake: INTERNAL, with the
    /// trailers it added before still sent.
    @Test(arguments: ["reserved", "control"]) func aBadTrailerIsTheHandlersMistake(kind: String) async throws {
        let (_, client, _) = InMemoryCallTests.connect(Self.router)
        let received = Received()
        let error = await #expect(throws: RPCError.self) {
            try await client.unary(Echo.unary, Scalars(fInt32: 1, fString: kind), options: received.options)
        }
        #expect(error?.code == .internal)
        #expect(received.last.map(\.key) == ["decided-by", "x-score-bin"])
    }

    /// A call without trailers gets an empty set: the caller learns the node sent none.
    @Test func aCallWithoutTrailersGetsNone() async throws {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in request }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let received = Received()
        _ = try await client.unary(Echo.unary, Scalars(), options: received.options)
        #expect(received.calls.withLock { $0.count } == 1)
        #expect(received.last.isEmpty)
    }
}
