import Foundation
import Synchronization
import Testing
import TokenetWire

@testable import TokenetRPC

/// Calls by path on serialized messages, against the same typed handlers the typed-call tests use.
@Suite struct UntypedCallTests {
    typealias Scalars = TestingV1.Scalars

    static func client() -> RPCClient {
        InMemoryCallTests.connect(InMemoryCallTests.echoRouter).1
    }

    @Test func unary() async throws {
        let response = try await Self.client().unary(
            path: "/tokenet.testing.v1.Echo/Unary", request: try Scalars(fInt32: 41).serializedData())
        #expect(try Scalars(serializedBytes: response) == Scalars(fInt32: 42))
    }

    @Test func serverStreaming() async throws {
        let responses = try await Self.client().serverStreaming(
            path: "/tokenet.testing.v1.Echo/ServerStream", request: try Scalars(fUint32: 3).serializedData())
        var received: [Int32] = []
        for try await data in responses { received.append(try Scalars(serializedBytes: data).fInt32) }
        #expect(received == [0, 1, 2])
    }

    @Test func clientStreaming() async throws {
        let requests = try (1...4).map { try Scalars(fInt32: Int32($0)).serializedData() }
        let response = try await Self.client().clientStreaming(
            path: "/tokenet.testing.v1.Echo/ClientStream", requests: requests)
        #expect(try Scalars(serializedBytes: response).fInt32 == 10)
    }

    @Test func bidirectionalFromAList() async throws {
        let sent = [TestingV1.Choice(pick: .text("a")), TestingV1.Choice(pick: .number(2))]
        let responses = try await Self.client().bidirectional(
            path: "/tokenet.testing.v1.Echo/Bidi", requests: try sent.map { try $0.serializedData() })
        var received: [TestingV1.Choice] = []
        for try await data in responses { received.append(try TestingV1.Choice(serializedBytes: data)) }
        #expect(received == sent)
    }

    @Test func bidirectionalWithAWriter() async throws {
        let (requests, responses) = try Self.client().bidirectional(path: "/tokenet.testing.v1.Echo/Bidi")
        await requests.send(try TestingV1.Choice(pick: .text("one")).serializedData())
        var iterator = responses.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(try TestingV1.Choice(serializedBytes: first).pick == .text("one"))
        requests.finish()
        #expect(try await iterator.next() == nil)
    }

    /// A unary method sent no request, or two, is a broken call protocol: INTERNAL, as gRPC answers it (it was
    /// INVALID_ARGUMENT, against Protos/README.md section 6).
    @Test(arguments: [0, 2]) func aUnaryMethodWithoutExactlyOneRequestIsInternal(count: Int) async throws {
        let requests = try (0..<count).map { _ in try Scalars(fInt32: 1).serializedData() }
        let error = try await #require(throws: RPCError.self) {
            try await Self.client().clientStreaming(path: "/tokenet.testing.v1.Echo/Unary", requests: requests)
        }
        #expect(error.code == .internal)
        #expect(error.message.contains(count == 0 ? "without a request message" : "exactly one request message"))
    }

    /// A router whose unary and server-streaming handlers answer nothing until cancelled, and a count of those
    /// that started.
    final class Started: Sendable {
        let count = Atomic<Int>(0)
    }

    static func silentRouter(_ started: Started) -> RPCRouter {
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, _ in
            started.count.add(1, ordering: .relaxed)
            try await Task.sleep(for: .seconds(3600))
            return request
        }
        router.serverStreaming(TestingV1.Echo.serverStream) { _, _, _ in
            started.count.add(1, ordering: .relaxed)
            try await Task.sleep(for: .seconds(3600))
        }
        return router
    }

    /// A caller cancelled while it waits for the answer is told CANCELLED: the response queue's own cancellation
    /// handler ended it cleanly first, and the caller read INTERNAL "the server ended the call without a response".
    @Test(.timeLimit(.minutes(3))) func aCancelledCallerIsToldCancelled() async throws {
        let started = Started()
        let client = InMemoryCallTests.connect(Self.silentRouter(started)).1
        let call = Task {
            try await client.unary(path: "/tokenet.testing.v1.Echo/Unary", request: try Scalars().serializedData())
        }
        while started.count.load(ordering: .relaxed) < 1 { try await Task.sleep(for: .milliseconds(5)) }
        call.cancel()
        let error = await #expect(throws: RPCError.self) { try await call.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }

    /// A consumer of a response stream cancelled while it waits is told CANCELLED, not an end of the stream as if
    /// the server had finished it.
    @Test(.timeLimit(.minutes(3))) func aCancelledStreamConsumerIsToldCancelled() async throws {
        let started = Started()
        let client = InMemoryCallTests.connect(Self.silentRouter(started)).1
        let responses = try await client.serverStreaming(
            path: "/tokenet.testing.v1.Echo/ServerStream", request: try Scalars().serializedData())
        let consumer = Task {
            var count = 0
            for try await _ in responses { count += 1 }
            return count
        }
        while started.count.load(ordering: .relaxed) < 1 { try await Task.sleep(for: .milliseconds(5)) }
        consumer.cancel()
        let error = await #expect(throws: RPCError.self) { try await consumer.value }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }

    @Test func unknownPathIsUnimplemented() async throws {
        let error = try await #require(throws: RPCError.self) {
            try await Self.client().clientStreaming(path: "/tokenet.testing.v1.Echo/Nope", requests: [])
        }
        #expect(error.code == .unimplemented)
        #expect(error.message.contains("/tokenet.testing.v1.Echo/Nope"))
    }

    /// A call that names no method is told so, rather than "unknown method " and nothing after it.
    @Test func aCallNamingNoMethodIsToldSo() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        let error = try await #require(throws: RPCError.self) { try await client.unary(path: "", request: Data()) }
        #expect(error.code == .unimplemented)
        #expect(error.message == "the call names no method; give one as /package.Service/Method")
    }

    /// An unknown method named with 60 KB (a call_start may take 64 KiB) is answered UNIMPLEMENTED with the name cut
    /// short: echoed whole, the status did not fit in a frame the client accepts, and the whole connection failed
    /// instead of the call.
    @Test func aHugeUnknownMethodStaysAStreamError() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd, settings: ConnectionSettings(maxFrameSize: 16 * 1024))
        let method = "/" + String(repeating: "a", count: 60_000)
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(path: method, request: Data())
        }
        #expect(error.code == .unimplemented)
        #expect(error.message.utf8.count < 400, "\(error.message.utf8.count) bytes")
        #expect(error.message.hasSuffix("... (60001 bytes)"))
        let response = try await client.unary(
            path: "/tokenet.testing.v1.Echo/Unary", request: try Scalars(fInt32: 1).serializedData())
        #expect(try Scalars(serializedBytes: response) == Scalars(fInt32: 2), "the connection carries on")
    }

    /// Keys under the runtime's prefix other than its own, malformed trace ids and invalid keys are refused with
    /// INVALID_ARGUMENT, and the message never repeats the value.
    @Test(arguments: [
        [("tokenet-trace-id", "4761000010000009")], [("tokenet-trace-id", "")], [("tokenet-trace-id", "ABCDEF12")],
        [("tokenet-trace-id", "abc1")], [("tokenet-trace-id", "abcdef12\nsecond")],
        [("tokenet-trace-id", String(repeating: "a", count: 33))], [("tokenet-anything", "x")], [("bad key", "x")],
        [("", "x")],
    ])
    func badRuntimeMetadataIsInvalidArgument(entries: [(String, String)]) async throws {
        let metadata = Metadata(
            wire: entries.map { WireV1.MetadataEntry(key: $0.0, value: .text($0.1)) })
        let error = try await #require(throws: RPCError.self) {
            try await Self.client().unary(
                path: "/tokenet.testing.v1.Echo/Unary", request: Data(), options: CallOptions(metadata: metadata))
        }
        #expect(error.code == .invalidArgument, "\(error)")
        #expect(
            error.message.hasPrefix("metadata key ") || error.message.hasPrefix("tokenet-trace-id must be 8 to 32"),
            "\(error)")
        #expect(!error.message.contains("4761000010000009"))
    }

    @Test(arguments: ["a1b2c3d4", "5eed0fca11ab1e5", "4bf92f3577b34da6a3ce929d0e0e4736"])
    func wellFormedTraceIDsAreCarried(traceID: String) async throws {
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, context in
            TestingV1.Scalars(fString: context.traceID)
        }
        let client = InMemoryCallTests.connect(router).1
        var metadata = Metadata()
        metadata.setTraceID(traceID)
        let response = try await client.unary(
            path: "/tokenet.testing.v1.Echo/Unary", request: Data(), options: CallOptions(metadata: metadata))
        #expect(try Scalars(serializedBytes: response).fString == traceID)
    }

    @Test func deadlineEndsAServerStream() async throws {
        let client = InMemoryCallTests.connect(Self.endlessRouter).1
        let responses = try await client.serverStreaming(
            path: "/tokenet.testing.v1.Echo/ServerStream", request: Data(),
            options: CallOptions(timeout: .seconds(1)))
        var received = 0
        let error = try await #require(throws: RPCError.self) {
            for try await _ in responses { received += 1 }
        }
        #expect(error.code == .deadlineExceeded)
        // Normally the one response arrives first; on a heavily loaded machine the deadline may win.
        #expect(received <= 1)
    }

    /// Sends one response, then waits until the call ends.
    static var endlessRouter: RPCRouter {
        var router = RPCRouter()
        router.serverStreaming(TestingV1.Echo.serverStream) { _, writer, _ in
            try await writer.send(Scalars(fInt32: 1))
            try await Task.sleep(for: .seconds(3600))
        }
        return router
    }
}
