import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// The limit on connections one client identity may hold at once (`RPCServer.connectionsPerPeer`).
@Suite(.timeLimit(.minutes(3))) struct ConnectionsPerPeerTests {
    typealias Scalars = TestingV1.Scalars

    static let hog = PeerIdentity(role: .wallet, nodeID: "wallet-hog")

    /// A connection from `peer` to `server`, and the task serving it (which ends when the connection has ended).
    static func connect(to server: RPCServer, as peer: PeerIdentity) -> (RPCClient, Task<Void, Never>) {
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: peer, server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let serving = Task { await server.serve(serverEnd) }
        return (RPCClient(stream: clientEnd), serving)
    }

    static func echo(_ client: RPCClient) async throws -> Int32 {
        try await client.unary(TestingV1.Echo.unary, Scalars(fInt32: 1)).fInt32
    }

    /// The peer's connection past the limit is told why and by how much, the node is told who, and another peer, or
    /// the same one once it closed a connection, is served as before.
    @Test func aConnectionPastThePeersLimitIsRefusedWithTheReason() async throws {
        let refusals = Mutex<[ConnectionRefusal]>([])
        let server = RPCServer(
            router: InMemoryCallTests.echoRouter, connectionsPerPeer: 2,
            refusalLog: { refusal in refusals.withLock { $0.append(refusal) } })
        let (first, firstServing) = Self.connect(to: server, as: Self.hog)
        let (second, _) = Self.connect(to: server, as: Self.hog)
        #expect(try await Self.echo(first) == 2)
        #expect(try await Self.echo(second) == 2)

        let (third, thirdServing) = Self.connect(to: server, as: Self.hog)
        do {
            _ = try await Self.echo(third)
            Issue.record("a third connection of the same peer was served")
            await third.close()
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(
                error.message.contains(
                    "tokenet://wallet/wallet-hog already has 2 connections open to this node, the most one peer may "
                        + "have"), "\(error.message)")
        }
        await thirdServing.value
        #expect(refusals.withLock { $0.map(\.peer) } == [Self.hog])
        #expect(server.connectionCount(of: Self.hog) == 2)

        let (other, _) = Self.connect(to: server, as: PeerIdentity(role: .wallet, nodeID: "wallet-2"))
        #expect(try await Self.echo(other) == 2)

        await first.close()
        await firstServing.value
        #expect(server.connectionCount(of: Self.hog) == 1)
        let (again, _) = Self.connect(to: server, as: Self.hog)
        #expect(try await Self.echo(again) == 2)
        #expect(refusals.withLock { $0.count } == 1)
    }

    /// The refusal is a goaway of its own code, after the server's hello, so that a client reads it as the reason.
    /// A channel refused as one connection too many counts the attempt as failed, says why, and backs off: it
    /// counted the hello as a connection made, and reconnected at once for every call (a wallet refused by its TSP
    /// made hundreds of connections a second).
    @Test func aChannelRefusedAsOneTooManyBacksOff() async throws {
        let server = RPCServer(router: InMemoryCallTests.echoRouter, connectionsPerPeer: 1)
        let (held, _) = Self.connect(to: server, as: Self.hog)
        #expect(try await Self.echo(held) == 2)
        let attempts = Atomic<Int>(0)
        let channel = RPCChannel(backoff: .init(initial: .seconds(30), maximum: .seconds(30))) {
            attempts.add(1, ordering: .relaxed)
            let (clientEnd, serverEnd) = InMemoryByteStream.pair(
                client: Self.hog, server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
            Task { await server.serve(serverEnd) }
            return clientEnd
        }
        // Deadlines long enough for a loaded machine to connect and read the refusal (with 500 ms, a full run once
        // timed the first call out before it, and the second call tried again), and shorter than the channel's
        // wait (10 s, at whose end a call with a longer deadline makes its last attempt) and the backoff, so that
        // each call after the refusal fails at once.
        for _ in 0..<3 {
            let error = await #expect(throws: RPCError.self) {
                _ = try await channel.unary(
                    TestingV1.Echo.unary, Scalars(fInt32: 1), options: CallOptions(timeout: .seconds(5)))
            }
            #expect(error?.code == .unavailable)
            #expect(error?.message.contains("already has 1 connections open") == true, "\(String(describing: error))")
        }
        #expect(attempts.load(ordering: .relaxed) == 1)
        await channel.close()
        await held.close()
    }

    @Test func theRefusalFollowsTheHelloWithItsOwnCode() {
        var machine = ConnectionStateMachine(role: .server, settings: .defaults, agent: "test")
        let hello = machine.start()
        let refusal = machine.tooManyConnections(reason: "too many")
        guard case .write(let helloFrame)? = hello.first, case .hello? = helloFrame.kind else {
            Issue.record("no hello: \(hello)")
            return
        }
        let goaways = refusal.compactMap { action -> WireV1.GoAway? in
            guard case .write(let frame) = action, case .goaway(let goaway)? = frame.kind else { return nil }
            return goaway
        }
        #expect(goaways == [WireV1.GoAway(lastStreamID: 0, code: .tooManyConnections, reason: "too many")])
        #expect(machine.state == .closed)
    }
}
