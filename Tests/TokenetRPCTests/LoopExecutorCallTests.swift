import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Calls whose server handlers run on the connection's event loop (`handlersOnConnectionLoop`) and whose callers
/// run on the client connection's loop (`RPCClient.executor`): every frame is then written and read on the loop
/// threads through the loop flush, which these tests exercise for every call type, flow control and errors.
@Suite(.serialized) struct LoopExecutorCallTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    struct Harness {
        let serverLoop: EventLoop
        let clientLoop: EventLoop
        let listener: TLSListener
        let server: RPCServer
        let serving: Task<Void, Never>

        func client() async throws -> RPCClient {
            let context = try TLSContext(
                configuration: .client(
                    certificateChainFile: LiveTLSCallTests.path("wallet.pem"),
                    privateKeyFile: LiveTLSCallTests.path("wallet.key"),
                    trustedCAFile: LiveTLSCallTests.path("ca.pem")
                )
            )
            let connection = try await TLSConnection.connect(
                host: "127.0.0.1", port: listener.port, context: context, on: clientLoop)
            return RPCClient(stream: connection)
        }

        func stop() async {
            server.shutdown()
            await listener.close()
            serving.cancel()
            clientLoop.shutdown()
            serverLoop.shutdown()
        }
    }

    static func start(_ router: RPCRouter, callLog: (@Sendable (CallRecord) -> Void)? = nil) async throws -> Harness {
        let serverLoop = try EventLoop(name: "rpc-loop-test-server")
        let clientLoop = try EventLoop(name: "rpc-loop-test-client")
        let context = try TLSContext(
            configuration: .server(
                certificateChainFile: LiveTLSCallTests.path("tsp.pem"),
                privateKeyFile: LiveTLSCallTests.path("tsp.key"),
                trustedCAFile: LiveTLSCallTests.path("ca.pem")
            )
        )
        let listener = try await TLSListener.bind(context: context, on: serverLoop)
        let server = RPCServer(
            router: router, settings: ConnectionSettings(maxConcurrentStreams: 1000), callLog: callLog,
            handlersOnConnectionLoop: true)
        let serving = Task { await server.serve(listener: listener) }
        return Harness(
            serverLoop: serverLoop, clientLoop: clientLoop, listener: listener, server: server, serving: serving)
    }

    /// The echo router, plus a unary method that reports whether its handler ran on the server's loop.
    static func router(serverLoop: @escaping @Sendable () -> EventLoop?) -> RPCRouter {
        var router = InMemoryCallTests.echoRouter
        router.unary(TestingV1.Echo.unary) { request, _ in
            if request.fString == "where" {
                return Scalars(fBool: serverLoop()?.inEventLoop ?? false)
            }
            if request.fString == "fail" { throw RPCError(.notFound, "no card with that id") }
            if request.fString == "slow" { try await Task.sleep(for: .seconds(30)) }
            var response = request
            response.fInt32 += 1
            return response
        }
        return router
    }

    @Test func everyCallTypeWithHandlersAndCallerOnTheLoops() async throws {
        let loopBox = Mutex<EventLoop?>(nil)
        let harness = try await Self.start(Self.router { loopBox.withLock { $0 } })
        loopBox.withLock { $0 = harness.serverLoop }
        let client = try await harness.client()
        let clientLoop = harness.clientLoop
        try await withTaskExecutorPreference(client.executor) {
            #expect(clientLoop.inEventLoop)
            #expect(try await client.unary(Echo.unary, Scalars(fString: "where")).fBool)
            #expect(try await client.unary(Echo.unary, Scalars(fInt32: 1)).fInt32 == 2)
            #expect(clientLoop.inEventLoop, "the caller resumes on its loop")
            // Enough messages to need flow-control window updates in both directions.
            var streamed: [Int32] = []
            for try await response in try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 3000)) {
                streamed.append(response.fInt32)
            }
            #expect(streamed == Array(0..<3000))
            let sum = try await client.clientStreaming(Echo.clientStream) { writer in
                for value in 1...3000 { try await writer.send(Scalars(fInt32: Int32(value), fString: "padding")) }
            }
            #expect(sum.fInt32 == 4_501_500)
            let (requests, responses) = try client.bidirectional(Echo.bidi)
            var iterator = responses.makeAsyncIterator()
            for value in ["a", "b", "c"] {
                try await requests.send(TestingV1.Choice(pick: .text(value)))
                #expect(try await iterator.next()?.pick == .text(value))
            }
            requests.finish()
            #expect(try await iterator.next() == nil)
            let failure = await #expect(throws: RPCError.self) {
                try await client.unary(Echo.unary, Scalars(fString: "fail"))
            }
            #expect(failure?.code == .notFound)
        }
        await client.close()
        await harness.stop()
    }

    @Test func thousandConcurrentCallsFromTasksOnTheClientLoop() async throws {
        let harness = try await Self.start(Self.router { nil })
        let client = try await harness.client()
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<1000 {
                group.addTask(executorPreference: client.executor) {
                    let response = try await client.unary(Echo.unary, Scalars(fInt32: Int32(index), fString: "x"))
                    return response.fInt32 == Int32(index) + 1
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answered == 1000)
        await client.close()
        await harness.stop()
    }

    @Test(.timeLimit(.minutes(3))) func deadlineAndCancellationOnTheLoops() async throws {
        let harness = try await Self.start(Self.router { nil })
        let client = try await harness.client()
        try await withTaskExecutorPreference(client.executor) {
            do {
                _ = try await client.unary(
                    Echo.unary, Scalars(fString: "slow"), options: CallOptions(timeout: .milliseconds(100)))
                Issue.record("the slow call returned")
            } catch let error as RPCError {
                #expect(error.code == .deadlineExceeded)
            }
            let slow = Task(executorPreference: client.executor) {
                try await client.unary(Echo.unary, Scalars(fString: "slow"))
            }
            try await Task.sleep(for: .milliseconds(50))
            slow.cancel()
            await #expect(throws: RPCError.self) { try await slow.value }
            #expect(try await client.unary(Echo.unary, Scalars(fInt32: 7)).fInt32 == 8, "the connection carries on")
        }
        #expect(harness.server.connectionCount == 1)
        await client.close()
        await harness.stop()
    }
}
