import Dispatch
import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A peer that stops reading holds the bytes written to it, never the callers that wrote them: a caller whose frames
/// wait for the socket still ends at its deadline.
@Suite(.serialized, .timeLimit(.minutes(3))) struct StalledPeerWriteTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// The server's loop is held, so it reads nothing, and a caller off the client's loop sends 16 requests of 900 KB
    /// one after the other (some 14 MB, more than the sockets and the connection buffer hold). Each caller writes
    /// its own frames (`RPCConnection.flushNow`): the first whose write the socket could not take waited for it past
    /// its deadline, for as long as the peer read nothing, and had the callers after it not waited for room, each
    /// would have added its request to what waits. Each must be told DEADLINE_EXCEEDED while the server still reads
    /// nothing, and the bytes waiting stay near the connection's high-water mark.
    @Test func callersOfAPeerThatReadsNothingEndAtTheirDeadlines() async throws {
        let stalled = try await StalledServer.start()
        let client = stalled.client
        let released = stalled.released

        let request = Scalars(fBytes: Data(repeating: 7, count: 900_000))
        var outcomes: [String] = []
        var lastMessage = ""
        for _ in 0..<16 {
            do {
                _ = try await client.unary(Echo.unary, request, options: CallOptions(timeout: .milliseconds(500)))
                outcomes.append("answered")
            } catch let error as RPCError {
                outcomes.append(released.flag.load(ordering: .relaxed) ? "ended after the release" : "\(error.code)")
                lastMessage = error.message
            }
        }
        // The later callers waited for room instead of adding their requests to what waits for the peer.
        let waiting = client.connection.core.withLock { $0.outbound.count }
        #expect(waiting <= RPCConnection.outboundHighWater + request.fBytes.count + 4096, "\(waiting) bytes wait")
        #expect(
            lastMessage.contains("could be sent: the peer has not read what this side sent"), "\(lastMessage)")
        // A caller without a deadline waits for room until its task is cancelled, and is told so.
        let waiter = Task { try await client.unary(Echo.unary, Scalars(fInt32: 1)) }
        try await Task.sleep(for: .milliseconds(200))
        waiter.cancel()
        var cancelled = "answered"
        do { _ = try await waiter.value } catch let error as RPCError {
            cancelled = released.flag.load(ordering: .relaxed) ? "ended after the release" : "\(error.code)"
        }
        #expect(cancelled == "\(StatusCode.cancelled)")
        stalled.release()
        // Once the server reads again, a call made while the buffer still holds more than its mark waits for room
        // and is answered.
        let answer = try await client.unary(
            Echo.unary, Scalars(fInt32: 1), options: CallOptions(timeout: .seconds(120)))
        #expect(answer.fInt32 == 2)
        #expect(outcomes == Array(repeating: "\(StatusCode.deadlineExceeded)", count: 16))
        await stalled.stop()
    }

    /// Server-streaming calls carry their request in the call's opening frames, as unary calls do, and wait for room
    /// the same way, typed or untyped (`tokenet call`): 16 of them of 900 KB each to a server that reads nothing each
    /// end DEADLINE_EXCEEDED, and the bytes waiting stay near the high-water mark.
    @Test func serverStreamsOpenedToAPeerThatReadsNothingWaitForRoom() async throws {
        let stalled = try await StalledServer.start()
        let client = stalled.client

        let request = Scalars(fUint32: 1, fBytes: Data(repeating: 7, count: 900_000))
        let options = CallOptions(timeout: .milliseconds(500))
        var outcomes: [String] = []
        for index in 0..<16 {
            do {
                if index % 2 == 0 {
                    for try await _ in try await client.serverStreaming(Echo.serverStream, request, options: options) {}
                } else {
                    let raw = try await client.serverStreaming(
                        path: Echo.serverStream.path, request: try request.serializedData(), options: options)
                    for try await _ in raw {}
                }
                outcomes.append("answered")
            } catch let error as RPCError {
                outcomes.append("\(error.code)")
            }
        }
        let waiting = client.connection.core.withLock { $0.outbound.count }
        stalled.release()
        #expect(waiting <= RPCConnection.outboundHighWater + 2 * request.fBytes.count, "\(waiting) bytes wait")
        #expect(outcomes == Array(repeating: "\(StatusCode.deadlineExceeded)", count: 16))
        await stalled.stop()
    }

    final class Released: Sendable {
        let flag = Atomic(false)
    }

    /// An echo server whose loop is held, so that it reads nothing, and a client connected to it (on a loop of its
    /// own) that was answered once before the hold.
    struct StalledServer {
        let client: RPCClient
        /// Set once the server's loop is let go: by `release()`, or after 150 s at most, so that a failing run still
        /// ends (60 s ran out once in a full run on a loaded machine, before the last of the calls had ended).
        let released = Released()
        private let releasing = DispatchSemaphore(value: 0)
        private let serverLoop: EventLoop
        private let clientLoop: EventLoop
        private let server: RPCServer
        private let listener: PlainListener
        private let serving: Task<Void, Never>

        static func start() async throws -> StalledServer {
            let serverLoop = try EventLoop(name: "rpc-stalled-server")
            let clientLoop = try EventLoop(name: "rpc-stalled-client")
            let listener = try await PlainListener.bind(on: serverLoop)
            let server = RPCServer(router: InMemoryCallTests.echoRouter)
            let serving = Task { await server.serve(listener: listener) }
            let client = RPCClient(
                stream: try await PlainConnection.connect(host: "127.0.0.1", port: listener.port, on: clientLoop))
            #expect(try await client.unary(Echo.unary, Scalars(fInt32: 1)).fInt32 == 2)
            let stalled = StalledServer(
                client: client, serverLoop: serverLoop, clientLoop: clientLoop, server: server, listener: listener,
                serving: serving)
            let held = DispatchSemaphore(value: 0)
            _ = serverLoop.execute { [releasing = stalled.releasing, released = stalled.released] in
                held.signal()
                _ = releasing.wait(timeout: .now() + 150)
                released.flag.store(true, ordering: .relaxed)
            }
            held.wait()
            return stalled
        }

        private init(
            client: RPCClient, serverLoop: EventLoop, clientLoop: EventLoop, server: RPCServer,
            listener: PlainListener, serving: Task<Void, Never>
        ) {
            self.client = client
            self.serverLoop = serverLoop
            self.clientLoop = clientLoop
            self.server = server
            self.listener = listener
            self.serving = serving
        }

        /// Lets the server's loop go: it reads again.
        func release() { releasing.signal() }

        func stop() async {
            releasing.signal()
            await client.close()
            server.shutdown()
            await listener.close()
            serving.cancel()
            serverLoop.shutdown()
            clientLoop.shutdown()
        }
    }
}
