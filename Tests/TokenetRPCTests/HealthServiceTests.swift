import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

@Suite struct HealthServiceTests {
    typealias Health = HealthV1.Health

    static func client(_ health: HealthService) -> Health.Client {
        var router = RPCRouter()
        health.register(on: &router)
        let (_, client, _) = InMemoryCallTests.connect(router)
        return Health.Client(client)
    }

    @Test func checkReportsTheNodeAndItsServices() async throws {
        let health = HealthService(services: ["tokenet.testing.v1.Echo"])
        let client = Self.client(health)
        #expect(try await client.check(HealthV1.HealthCheckRequest()).status == .serving)
        #expect(
            try await client.check(HealthV1.HealthCheckRequest(service: "tokenet.testing.v1.Echo")).status == .serving)
        do {
            _ = try await client.check(HealthV1.HealthCheckRequest(service: "tokenet.nope.v1.Nope"))
            Issue.record("an unknown service was reported")
        } catch let error as RPCError {
            #expect(error.code == .notFound)
            #expect(error.message == "this node does not serve tokenet.nope.v1.Nope")
        }
    }

    /// A service name of a megabyte is cut short in the status, as an unknown method's name is; the whole name used to
    /// come back, and `tokenet call` printed a megabyte of error.
    @Test func anUnknownServiceWithALongNameIsCutShort() async throws {
        let client = Self.client(HealthService(services: []))
        let name = String(repeating: "a", count: 1_000_000)
        let error = try await #require(throws: RPCError.self) {
            try await client.check(HealthV1.HealthCheckRequest(service: name))
        }
        #expect(error.code == .notFound)
        #expect(error.message == "this node does not serve \(String(repeating: "a", count: 256))... (1000000 bytes)")
    }

    @Test func watchSeesChangesAndEndsWhenTheNodeDrains() async throws {
        let health = HealthService(services: ["tokenet.testing.v1.Echo"])
        let client = Self.client(health)
        var updates = try await client.watch(HealthV1.HealthCheckRequest(service: "tokenet.testing.v1.Echo"))
            .makeAsyncIterator()
        #expect(try await updates.next()?.status == .serving)
        health.set("tokenet.testing.v1.Echo", .notServing)
        #expect(try await updates.next()?.status == .notServing)
        health.set("tokenet.testing.v1.Echo", .serving)
        #expect(try await updates.next()?.status == .serving)
        health.markAllNotServing()
        #expect(try await updates.next()?.status == .notServing)
        // The watch ends so that draining is not held up, UNAVAILABLE as the node's other streams: the node is going
        // away, not done.
        let error = await #expect(throws: RPCError.self) { _ = try await updates.next() }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("shutting down") == true, "\(String(describing: error))")
    }

    /// A watch its client cancels is logged CANCELLED, as any other call the caller gave up on: the handler returns
    /// normally once its updates end with its task, and was logged OK.
    @Test(.timeLimit(.minutes(3))) func aCancelledWatchIsLoggedCancelled() async throws {
        var router = RPCRouter()
        HealthService(services: []).register(on: &router)
        let records = Mutex<[CallRecord]>([])
        let (_, raw, _) = InMemoryCallTests.connect(
            router, callLog: { record in records.withLock { $0.append(record) } })
        let client = Health.Client(raw)
        let (first, seen) = AsyncStream<Void>.makeStream()
        let watching = Task {
            var updates = try await client.watch(HealthV1.HealthCheckRequest()).makeAsyncIterator()
            _ = try await updates.next()
            seen.yield()
            _ = try await updates.next()
        }
        for await _ in first { break }
        watching.cancel()
        _ = await watching.result
        while records.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        let record = try #require(records.withLock { $0.first })
        #expect(record.method == Health.watch.path)
        #expect(record.code == .cancelled)
    }

    /// At the drain, NOT_SERVING goes only if the client has room for it: a client that grants no window (it has
    /// not read SERVING) gets the watch's UNAVAILABLE at once, where the status waited behind NOT_SERVING, and held
    /// the node's drain, until the drain timeout.
    @Test(.timeLimit(.minutes(3))) func aWatchWhoseClientGrantsNoWindowEndsAtTheDrain() async throws {
        let health = HealthService(services: [])
        var router = RPCRouter()
        health.register(on: &router)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair(
            client: PeerIdentity(role: .wallet, nodeID: "wallet-1"), server: PeerIdentity(role: .tsp, nodeID: "tsp-1"))
        let server = RPCServer(router: router)
        Task { await server.serve(serverEnd) }
        // A window of 3 bytes: SERVING (2 bytes) leaves 1, too little for NOT_SERVING, until SERVING is read.
        let raw = RPCClient(stream: clientEnd, settings: ConnectionSettings(initialStreamWindow: 3))
        let stream = try await Health.Client(raw).watch(HealthV1.HealthCheckRequest())
        func received() -> Bool { raw.connection.core.withLock { $0.machine.streams[1]?.receiveWindow == 1 } }
        for _ in 0..<6_000 where !received() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received(), "SERVING came")
        health.markAllNotServing()
        // Still unread, SERVING came first; then the status, with nothing between them.
        var updates = stream.makeAsyncIterator()
        #expect(try await updates.next()?.status == .serving)
        let error = await #expect(throws: RPCError.self) { _ = try await updates.next() }
        #expect(error?.code == .unavailable)
    }

    /// A watch opened while the node drains says NOT_SERVING and ends at once, rather than waiting out the drain.
    @Test func aWatchOpenedDuringTheDrainEndsAtOnce() async throws {
        let health = HealthService(services: [])
        let client = Self.client(health)
        health.markAllNotServing()
        var updates = try await client.watch(HealthV1.HealthCheckRequest()).makeAsyncIterator()
        #expect(try await updates.next()?.status == .notServing)
        let error = await #expect(throws: RPCError.self) { _ = try await updates.next() }
        #expect(error?.code == .unavailable)
    }
}
