import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// `CallOptions.expectedPeer`: a call meant for one party is never sent to another that answers at the address,
/// whatever its role, nor to a peer without an identity.
@Suite struct ExpectedPeerTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    static let issuer1 = PeerIdentity(role: .issuer, nodeID: "issuer-1")
    static let issuer2 = PeerIdentity(role: .issuer, nodeID: "issuer-2")

    /// How many calls reached the server.
    final class Reached: Sendable {
        let count = Mutex(0)
        func withLock<T>(_ body: (inout Int) -> T) -> T { count.withLock { body(&$0) } }
    }

    /// A client of a server that identifies as `server` and counts the calls that reached it.
    static func connect(to server: PeerIdentity?) -> (RPCClient, Reached) {
        let reached = Reached()
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            reached.withLock { $0 += 1 }
            return request
        }
        router.serverStreaming(Echo.serverStream) { _, _, _ in reached.withLock { $0 += 1 } }
        let rpcServer = RPCServer(router: router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .tsp, nodeID: "tsp-1"), server: server)
        Task { await rpcServer.serve(serverEnd) }
        return (RPCClient(stream: clientEnd), reached)
    }

    static func expecting(_ peer: PeerIdentity) -> CallOptions {
        var options = CallOptions()
        options.expectedPeer = peer
        return options
    }

    @Test func theExpectedPeerIsCalled() async throws {
        let (client, _) = Self.connect(to: Self.issuer1)
        #expect(client.peerIdentity == Self.issuer1)
        let answer = try await client.unary(Echo.unary, Scalars(fString: "card"), options: Self.expecting(Self.issuer1))
        #expect(answer.fString == "card")
    }

    @Test func anotherPeerOfTheSameRoleGetsNothing() async throws {
        let (client, reached) = Self.connect(to: Self.issuer2)
        do {
            _ = try await client.unary(Echo.unary, Scalars(fString: "card"), options: Self.expecting(Self.issuer1))
            Issue.record("the call reached issuer-2")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.unexpectedPeer?.actual == Self.issuer2 && error.unexpectedPeer?.expected == Self.issuer1)
            #expect(
                error.message.contains("tokenet://issuer/issuer-2, not tokenet://issuer/issuer-1"), "\(error.message)")
        }
        await #expect(throws: RPCError.self) {
            _ = try await client.serverStreaming(Echo.serverStream, Scalars(), options: Self.expecting(Self.issuer1))
        }
        // The connection itself is fine: a call without an expectation, or expecting issuer-2, goes through.
        _ = try await client.unary(Echo.unary, Scalars(), options: Self.expecting(Self.issuer2))
        #expect(reached.withLock { $0 } == 1)
    }

    @Test func aPeerWithoutAnIdentityGetsNothing() async throws {
        let (client, reached) = Self.connect(to: nil)
        let error = await #expect(throws: RPCError.self) {
            _ = try await client.unary(Echo.unary, Scalars(), options: Self.expecting(Self.issuer1))
        }
        #expect(error?.code == .unavailable && error?.message.contains("unidentified (plaintext)") == true)
        #expect(reached.withLock { $0 } == 0)
    }
}
