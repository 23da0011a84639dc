import Foundation
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Keepalive and idle timeouts over the in-memory transport.
@Suite struct ConnectionTimerTests {
    static func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func idleConnectionIsClosedByTheServer() async throws {
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter, timers: ConnectionTimers(idleTimeout: .milliseconds(100)))
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        let serving = Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        #expect(try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1)).fInt32 == 2)
        await serving.value  // returns once the server closed the idle connection
        try await Self.waitUntil { !client.isUsable }
        #expect(!client.isUsable)
    }

    @Test func answeredKeepaliveKeepsTheConnection() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        // A generous timeout: on a loaded machine a pong can take a while, and only its absence may close.
        let timers = ConnectionTimers(keepaliveInterval: .milliseconds(20), keepaliveTimeout: .seconds(30))
        let client = RPCClient(stream: clientEnd, timers: timers)
        // A ping is sent only once the one before it was answered, each with a payload of its own: three payloads
        // seen mean two pongs matched their pings (a pong ignored leaves the first one outstanding for good).
        var payloads: Set<UInt64> = []
        for _ in 0..<2000 where payloads.count < 3 {
            if let payload = client.connection.core.withLock({ $0.outstandingPing?.payload }) {
                payloads.insert(payload)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(payloads.count >= 3, "\(payloads.count) pings seen")
        #expect(client.isUsable)
        #expect(try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1)).fInt32 == 2)
    }

    @Test(.timeLimit(.minutes(3))) func unansweredKeepaliveClosesTheConnectionAndFailsCalls() async throws {
        // The peer accepts bytes but never answers anything: a half-dead connection.
        let (clientEnd, _) = InMemoryByteStream.pair()
        let timers = ConnectionTimers(keepaliveInterval: .milliseconds(20), keepaliveTimeout: .milliseconds(100))
        let client = RPCClient(stream: clientEnd, timers: timers)
        do {
            _ = try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars())
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("no answer to keepalive ping"))
        }
        #expect(!client.isUsable)
    }

    /// Whatever answered the connection never sends a hello (a server of another protocol that waits for a request):
    /// a call without a deadline fails once the hello timeout passes, instead of waiting forever.
    @Test(.timeLimit(.minutes(3))) func aPeerThatNeverSaysHelloIsGivenUp() async throws {
        let (clientEnd, _) = InMemoryByteStream.pair()
        let client = RPCClient(stream: clientEnd, timers: ConnectionTimers(helloTimeout: .milliseconds(200)))
        let error = try await #require(throws: RPCError.self) {
            try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars())
        }
        #expect(error.code == .unavailable)
        #expect(error.message.contains("no hello from the peer within 0.2 seconds"), "\(error)")
        #expect(!client.isUsable)
    }
}
