import Foundation
import Synchronization
import Testing
import TokenetFaults
import TokenetTestSupport
import TokenetTransport

/// The proxy over real TCP on loopback, between a client and a server of plain connections.
@Suite struct FaultProxyTests {
    /// A server that runs `handle` for each connection, the proxy in front of it, and their loop.
    final class Rig: Sendable {
        let loop: EventLoop
        let server: PlainListener
        let proxy: FaultProxy
        let serving: Task<Void, Never>
        let proxying: Task<Void, Never>

        init(
            serverOptions: PlainConnection.Options = .init(),
            _ handle: @escaping @Sendable (PlainConnection) async -> Void
        ) async throws {
            loop = try EventLoop(name: "test-fault-proxy")
            server = try await PlainListener.bind(on: loop, options: serverOptions)
            proxy = try await FaultProxy.bind(upstreamHost: "127.0.0.1", upstreamPort: server.port, on: loop)
            let server = server
            serving = Task {
                await withDiscardingTaskGroup { group in
                    for await connection in server.connections { group.addTask { await handle(connection) } }
                }
            }
            let proxy = proxy
            proxying = Task { await proxy.serve() }
        }

        func connect() async throws -> PlainConnection {
            try await PlainConnection.connect(host: "127.0.0.1", port: proxy.port, on: loop)
        }

        func stop() async {
            await proxy.close()
            await proxying.value
            await server.close()
            serving.cancel()
            loop.shutdown()
        }
    }

    static func echo(_ connection: PlainConnection) async {
        while let bytes = try? await connection.read() {
            do { try await connection.write(bytes) } catch { break }
        }
    }

    /// Reads until `count` bytes came, the stream ended, or `limit` passed; returns what came.
    static func read(_ count: Int, from connection: PlainConnection, within limit: Duration) async -> [UInt8] {
        await within(limit) {
            var received: [UInt8] = []
            while received.count < count, let bytes = try? await connection.read() { received += bytes }
            return received
        } ?? []
    }

    /// Reads until the stream ends or `limit` passes; returns what came and whether the end did.
    static func readToEnd(from connection: PlainConnection, within limit: Duration) async -> ([UInt8], ended: Bool) {
        await within(limit) {
            var received: [UInt8] = []
            while true {
                do {
                    guard let bytes = try await connection.read() else { return (received, true) }
                    received += bytes
                } catch {
                    return (received, false)
                }
            }
        } ?? ([], false)
    }

    /// What `body` returns, cut short once `limit` passes: it is then cancelled, and what it returns on being
    /// cancelled (what it read so far) is the answer; nil only when it returns nothing either way.
    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            let second = await group.next() ?? nil
            return first ?? second
        }
    }

    /// Echoes what comes until the end of the stream, then ends its own: a server that answers a client's
    /// half-close, as a TCP echo server does.
    static func echoUntilTheEnd(_ connection: PlainConnection) async {
        while let bytes = try? await connection.read() {
            do { try await connection.write(bytes) } catch { break }
        }
        await connection.close()
    }

    static let halfClosing = PlainConnection.Options(halfClose: true)

    static func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ seed) }
    }

    @Test func aMegabyteGoesThroughBothWaysInOrder() async throws {
        let rig = try await Rig(Self.echo)
        let client = try await rig.connect()
        let sent = Self.pattern(1 << 20)
        async let echoed = Self.read(sent.count, from: client, within: .seconds(120))
        for start in stride(from: 0, to: sent.count, by: 10_000) {
            try await client.write(Array(sent[start..<min(start + 10_000, sent.count)]))
        }
        #expect(await echoed == sent)
        #expect(rig.proxy.connectionCount == 1)
        await client.close()
        await rig.stop()
    }

    @Test func aDelayHoldsEachDirectionBack() async throws {
        let rig = try await Rig(Self.echo)
        let client = try await rig.connect()
        // Once without a fault, to have the connection carried.
        try await client.write([0])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [0])
        rig.proxy.set(.delay(.milliseconds(150)))
        let clock = ContinuousClock()
        let started = clock.now
        try await client.write(Self.pattern(100))
        #expect(await Self.read(100, from: client, within: .seconds(120)) == Self.pattern(100))
        // 150 ms each way.
        #expect(clock.now - started >= .milliseconds(300))
        #expect(rig.proxy.summary == "delay 150ms")
        await client.close()
        await rig.stop()
    }

    /// A mistyped `delay 10m` is mended by healing: what the delay holds arrives at once, in order, rather than
    /// after ten minutes (or never, unless every connection is reset).
    @Test func healingReleasesWhatALongDelayHolds() async throws {
        let rig = try await Rig(Self.echo)
        let client = try await rig.connect()
        try await client.write([0])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [0])
        rig.proxy.set(.delay(.seconds(600)))
        try await client.write(Self.pattern(3000, seed: 1))
        try await client.write(Self.pattern(3000, seed: 2))
        #expect(await Self.read(1, from: client, within: .milliseconds(300)) == [])
        // Shortened, then lifted: each brings what waits forward, and later bytes still come after it.
        rig.proxy.set(.delay(.seconds(300)))
        #expect(await Self.read(1, from: client, within: .milliseconds(200)) == [])
        rig.proxy.set(.none)
        try await client.write(Self.pattern(3000, seed: 3))
        let echoed = await Self.read(9000, from: client, within: .seconds(60))
        let expected = Self.pattern(3000, seed: 1) + Self.pattern(3000, seed: 2) + Self.pattern(3000, seed: 3)
        #expect(echoed.count == expected.count, "\(echoed.count) of \(expected.count) bytes came back")
        #expect(echoed == expected, "the bytes came back out of order")
        await client.close()
        await rig.stop()
    }

    /// Under a long delay the proxy stops reading a sender once 1 MiB is on its way, as a partition does: a busy
    /// link could otherwise fill the machine's memory with ten minutes of traffic. Healing sends it all, in order.
    @Test func aLongDelayHoldsAtMostTheLimitAndThenStopsReading() async throws {
        let rig = try await Rig(Self.echo)
        let client = try await rig.connect()
        try await client.write([0])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [0])
        rig.proxy.set(.delay(.seconds(600)), only: .toUpstream)
        let sent = Self.pattern(16 << 20)
        let written = Mutex(0)
        let writing = Task {
            for start in stride(from: 0, to: sent.count, by: 64 << 10) {
                let end = min(start + (64 << 10), sent.count)
                try await client.write(Array(sent[start..<end]))
                written.withLock { $0 = end }
            }
        }
        try await Task.sleep(for: .seconds(1))
        // The kernel's buffers take a few MiB more than the proxy; 16 MiB cannot all have gone in.
        let accepted = written.withLock { $0 }
        #expect(accepted < sent.count, "all 16 MiB went into the proxy under a ten-minute delay")
        rig.proxy.set(.none)
        let echoed = await Self.read(sent.count, from: client, within: .seconds(120))
        #expect(echoed.count == sent.count, "\(echoed.count) of \(sent.count) bytes came back")
        #expect(echoed == sent, "the bytes came back out of order")
        try await writing.value
        await client.close()
        await rig.stop()
    }

    @Test func aPartitionHoldsBytesUntilItIsLifted() async throws {
        let rig = try await Rig(Self.echo)
        let client = try await rig.connect()
        try await client.write([1])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [1])
        rig.proxy.set(.partition)
        try await client.write(Self.pattern(5000, seed: 1))
        try await client.write(Self.pattern(5000, seed: 2))
        #expect(await Self.read(1, from: client, within: .milliseconds(400)) == [])
        rig.proxy.set(.none)
        let echoed = await Self.read(10_000, from: client, within: .seconds(120))
        #expect(echoed == Self.pattern(5000, seed: 1) + Self.pattern(5000, seed: 2))
        await client.close()
        await rig.stop()
    }

    @Test func aLostResponseReachesTheServerAndComesBackOnlyWhenHealed() async throws {
        let received = Atomic<Int>(0)
        let rig = try await Rig { connection in
            while let bytes = try? await connection.read() {
                received.add(bytes.count, ordering: .relaxed)
                do { try await connection.write(bytes) } catch { break }
            }
        }
        let client = try await rig.connect()
        try await client.write([1])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [1])
        rig.proxy.set(.partition, only: .toClient)
        try await client.write(Self.pattern(300))
        // The request arrives; its echo does not.
        let deadline = ContinuousClock.now + .seconds(120)
        while received.load(ordering: .relaxed) < 301, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(received.load(ordering: .relaxed) == 301)
        #expect(await Self.read(1, from: client, within: .milliseconds(300)) == [])
        rig.proxy.set(.none, only: .toClient)
        #expect(await Self.read(300, from: client, within: .seconds(120)) == Self.pattern(300))
        await client.close()
        await rig.stop()
    }

    @Test func aPartitionStopsReadingASenderPastItsLimit() async throws {
        // The upstream never reads: with a 64 KiB hold limit the proxy stops reading the client, so the client's
        // writes back up into its own bounded buffer instead of the proxy's memory.
        let loop = try EventLoop(name: "test-fault-proxy-limit")
        let server = try await PlainListener.bind(on: loop)
        let proxy = try await FaultProxy.bind(
            upstreamHost: "127.0.0.1", upstreamPort: server.port, fault: .partition, holdLimit: 64 * 1024, on: loop)
        let proxying = Task { await proxy.serve() }
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: proxy.port, on: loop,
            options: .init(outboundHighWater: 64 * 1024, inboundHighWater: 64 * 1024))
        let written = Atomic<Int>(0)
        let writing = Task {
            let chunk = [UInt8](repeating: 7, count: 16 * 1024)
            while !Task.isCancelled {
                do { try await client.write(chunk) } catch { break }
                written.add(chunk.count, ordering: .relaxed)
            }
        }
        // Without the limit the proxy reads whatever comes: hundreds of MB a second here. With it, what the proxy
        // (64 KiB plus one read), the kernel's buffers and the client's hold: a few MB at most.
        try await Task.sleep(for: .seconds(3))
        let total = written.load(ordering: .relaxed)
        #expect(total < 16 << 20, "\(total) bytes written into a partition")
        writing.cancel()
        await client.close()
        await proxy.close()
        await proxying.value
        await server.close()
        loop.shutdown()
    }

    @Test func refusingClosesNewConnectionsAndKeepsEstablishedOnes() async throws {
        let rig = try await Rig(Self.echo)
        let established = try await rig.connect()
        try await established.write([1])
        #expect(await Self.read(1, from: established, within: .seconds(120)) == [1])
        rig.proxy.set(.refuse)
        let refused = try await rig.connect()
        let ended = await Self.read(1, from: refused, within: .seconds(120))
        #expect(ended == [])
        let failed = await #expect(throws: (any Error).self) {
            for _ in 0..<50 {
                try await refused.write([2])
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(failed != nil)
        try await established.write([3])
        #expect(await Self.read(1, from: established, within: .seconds(120)) == [3])
        await rig.stop()
    }

    @Test func resetCutsEveryConnection() async throws {
        let rig = try await Rig(Self.echo)
        let first = try await rig.connect()
        let second = try await rig.connect()
        for client in [first, second] {
            try await client.write([1])
            #expect(await Self.read(1, from: client, within: .seconds(120)) == [1])
        }
        #expect(rig.proxy.connectionCount == 2)
        rig.proxy.reset()
        // A TCP reset, not an orderly end: the next read fails instead of returning the end of the stream.
        for client in [first, second] {
            let error = await #expect(throws: TransportError.self) { _ = try await client.read() }
            #expect(error?.description.contains("reset by peer") == true, "\(String(describing: error))")
        }
        #expect(rig.proxy.connectionCount == 0)
        // New connections are carried again.
        let third = try await rig.connect()
        try await third.write([4])
        #expect(await Self.read(1, from: third, within: .seconds(120)) == [4])
        await rig.stop()
    }

    /// Waits, for up to two minutes, until the server has closed its side: a client's end of stream, which the proxy
    /// passes on, would otherwise close the server's connection (it takes no half-close) before its last writes.
    static func waitUntilClosed(_ serverClosed: borrowing Atomic<Bool>) async throws {
        let started = ContinuousClock.now
        while !serverClosed.load(ordering: .acquiring), ContinuousClock.now - started < .seconds(120) {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits, for up to two minutes, until the server has closed its side and the proxy carries no connection any
    /// more: what a delay held is then left only in the writer.
    static func waitForTheEnd(of rig: Rig, serverClosed: borrowing Atomic<Bool>) async throws {
        let started = ContinuousClock.now
        while !serverClosed.load(ordering: .acquiring) || rig.proxy.connectionCount != 0 {
            guard ContinuousClock.now - started < .seconds(120) else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(serverClosed.load(ordering: .acquiring) && rig.proxy.connectionCount == 0)
    }

    /// A connection one side has ended may still hold delayed bytes for the other; a reset cuts it too, rather than
    /// leaving it (and the proxy's end, which resets) to wait out the delay.
    @Test func resetCutsAConnectionThatIsStillDeliveringDelayedBytes() async throws {
        let serverClosed = Atomic<Bool>(false)
        let rig = try await Rig { connection in
            try? await connection.write([7])
            await connection.close()
            serverClosed.store(true, ordering: .releasing)
        }
        rig.proxy.set(.delay(.seconds(600)), only: .toClient)
        let client = try await rig.connect()
        // The server's end ends one direction only: the client ends the other, once the server is done.
        try await Self.waitUntilClosed(serverClosed)
        await client.shutdownWrite()
        // Once the server has closed and the proxy carries no connection any more, only the delayed byte and the
        // close are left, waiting in the writer.
        try await Self.waitForTheEnd(of: rig, serverClosed: serverClosed)
        rig.proxy.reset()
        let error = await #expect(throws: TransportError.self) { _ = try await client.read() }
        #expect(error?.description.contains("reset by peer") == true, "\(String(describing: error))")
        await rig.stop()
    }

    /// A side that closes under a long delay leaves its last bytes and its close waiting in the writer: healing
    /// delivers them at once, in order, then the close, as it does on a connection still open.
    @Test func healingReleasesWhatALongDelayHoldsForAConnectionOneSideClosed() async throws {
        let serverClosed = Atomic<Bool>(false)
        let rig = try await Rig { connection in
            try? await connection.write([7, 8])
            try? await connection.write([9])
            await connection.close()
            serverClosed.store(true, ordering: .releasing)
        }
        rig.proxy.set(.delay(.seconds(600)), only: .toClient)
        let client = try await rig.connect()
        try await Self.waitUntilClosed(serverClosed)
        await client.shutdownWrite()
        try await Self.waitForTheEnd(of: rig, serverClosed: serverClosed)
        let early = await Self.readToEnd(from: client, within: .milliseconds(300))
        #expect(early.0 == [] && !early.ended)
        rig.proxy.set(.none)
        // Up to the end of the stream, which comes after the bytes.
        let delivered = await Self.readToEnd(from: client, within: .seconds(60))
        #expect(delivered.0 == [7, 8, 9])
        #expect(delivered.ended)
        await rig.stop()
    }

    @Test func whatWasSentBeforeAnEndArrivesBeforeIt() async throws {
        // The server writes 200 KB and closes at once; under a delay, all of it still reaches the client first.
        let payload = Self.pattern(200_000, seed: 3)
        let rig = try await Rig { connection in
            try? await connection.write(payload)
            await connection.close()
        }
        rig.proxy.set(.delay(.milliseconds(100)))
        let client = try await rig.connect()
        #expect(await Self.read(payload.count + 1, from: client, within: .seconds(120)) == payload)
        await rig.stop()
    }

    /// A client that shuts down its writes still hears the answer: the proxy passes its end of stream on to the
    /// server after the bytes before it, and the answer, then the server's end, come back.
    @Test func aHalfCloseIsCarriedOnAndTheAnswerStillComesBack() async throws {
        let rig = try await Rig(serverOptions: Self.halfClosing, Self.echoUntilTheEnd)
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: rig.proxy.port, on: rig.loop, options: Self.halfClosing)
        try await client.write(Array("hello".utf8))
        await client.shutdownWrite()
        let (echoed, ended) = await Self.readToEnd(from: client, within: .seconds(60))
        #expect(echoed == Array("hello".utf8))
        #expect(ended, "the server's end of stream never came")
        // Both directions ended: the connection is done.
        let started = ContinuousClock.now
        while rig.proxy.connectionCount != 0, ContinuousClock.now - started < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(rig.proxy.connectionCount == 0)
        await client.close()
        await rig.stop()
    }

    /// Megabytes sent before a half-close all come back, under a delay too: the end goes on after the last chunk.
    @Test func everyByteSentBeforeAHalfCloseComesBackUnderADelay() async throws {
        let rig = try await Rig(serverOptions: Self.halfClosing, Self.echoUntilTheEnd)
        rig.proxy.set(.delay(.milliseconds(20)))
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: rig.proxy.port, on: rig.loop, options: Self.halfClosing)
        let sent = Self.pattern(3 << 20, seed: 5)
        async let echoed = Self.readToEnd(from: client, within: .seconds(120))
        for start in stride(from: 0, to: sent.count, by: 64 << 10) {
            try await client.write(Array(sent[start..<min(start + (64 << 10), sent.count)]))
        }
        await client.shutdownWrite()
        let (received, ended) = await echoed
        #expect(received.count == sent.count, "\(received.count) of \(sent.count) bytes came back")
        #expect(received == sent)
        #expect(ended, "the server's end of stream never came")
        await client.close()
        await rig.stop()
    }

    /// A server's stream of many small writes under a delay of a millisecond comes through whole: a chunk due a
    /// moment later could have its timer fire before its writer was registered as asleep, and the writer then slept
    /// for good, stalling the stream (about one run in two of 20 MB).
    @Test func aStreamOfSmallWritesUnderAShortDelayNeverStalls() async throws {
        let size = 4 << 20
        let rig = try await Rig { connection in
            guard (try? await connection.read()) != nil else { return }
            for _ in 0..<(size / 4096) {
                do { try await connection.write([UInt8](repeating: 7, count: 4096)) } catch { return }
            }
            await connection.close()
        }
        rig.proxy.set(.delay(.milliseconds(1)))
        for _ in 0..<3 {
            let client = try await rig.connect()
            try await client.write([1])
            let (received, ended) = await Self.readToEnd(from: client, within: .seconds(120))
            #expect(received.count == size && ended, "\(received.count) of \(size) bytes, ended: \(ended)")
            await client.close()
        }
        await rig.stop()
    }

    /// A side that resets its connection is passed on as a reset, not as a clean end of stream: a client waiting
    /// after its request took a server's cut-off answer for a whole one.
    @Test func aResetByOneSideReachesTheOtherAsAReset() async throws {
        let rig = try await Rig { connection in
            guard (try? await connection.read()) != nil else { return }
            try? await connection.write([UInt8](repeating: 9, count: 1000))
            await connection.abort()
        }
        let client = try await rig.connect()
        try await client.write([1])
        var received = 0
        let error = await #expect(throws: TransportError.self) {
            while let bytes = try await client.read() { received += bytes.count }
        }
        #expect(error?.description.contains("reset by peer") == true, "\(String(describing: error)) after \(received)")
        await client.close()
        await rig.stop()
    }

    /// Under a partition to the server, a client's end waits behind the bytes it holds: the server sees neither
    /// until the partition is lifted, then the bytes and the end, and its answer comes back.
    @Test func aHalfCloseUnderAPartitionWaitsBehindWhatItHolds() async throws {
        let rig = try await Rig(serverOptions: Self.halfClosing, Self.echoUntilTheEnd)
        let client = try await PlainConnection.connect(
            host: "127.0.0.1", port: rig.proxy.port, on: rig.loop, options: Self.halfClosing)
        try await client.write([1])
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [1])
        rig.proxy.set(.partition, only: .toUpstream)
        try await client.write(Self.pattern(5000, seed: 4))
        await client.shutdownWrite()
        let (early, endedEarly) = await Self.readToEnd(from: client, within: .milliseconds(400))
        #expect(early == [] && !endedEarly)
        rig.proxy.set(.none)
        let (echoed, ended) = await Self.readToEnd(from: client, within: .seconds(60))
        #expect(echoed == Self.pattern(5000, seed: 4))
        #expect(ended, "the server's end of stream never came")
        await client.close()
        await rig.stop()
    }

    @Test func anUnreachableUpstreamClosesTheClient() async throws {
        let loop = try EventLoop(name: "test-fault-proxy-unreachable")
        let refusing = try LoopbackSocket.RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let proxy = try await FaultProxy.bind(upstreamHost: "127.0.0.1", upstreamPort: refusing.port, on: loop)
        let proxying = Task { await proxy.serve() }
        let client = try await PlainConnection.connect(host: "127.0.0.1", port: proxy.port, on: loop)
        #expect(await Self.read(1, from: client, within: .seconds(120)) == [])
        #expect(proxy.connectionCount == 0)
        await proxy.close()
        await proxying.value
        loop.shutdown()
    }
}
