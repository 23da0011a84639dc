import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// A peer that stops reading slows down its own call; nobody buffers without bound.
@Suite struct BackpressureTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    @Test func serverStreamWaitsForAClientThatDoesNotRead() async throws {
        let sent = Atomic<Int>(0)
        let payload = Data(repeating: 7, count: 16 * 1024)
        var router = RPCRouter()
        router.serverStreaming(Echo.serverStream) { request, writer, _ in
            for index in 0..<Int(request.fUint32) {
                try await writer.send(Scalars(fInt32: Int32(index), fBytes: payload))
                sent.add(1, ordering: .relaxed)
            }
        }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let responses = try await client.serverStreaming(Echo.serverStream, Scalars(fUint32: 300))
        // Wait until the sender stops making progress (it is blocked), however slow the machine is.
        var sentWhileNotReading = -1
        for _ in 0..<100 {
            try await Task.sleep(for: .milliseconds(50))
            let now = sent.load(ordering: .relaxed)
            if now == sentWhileNotReading, now > 0 { break }
            sentWhileNotReading = now
        }
        // The stream window is 1 MiB: 64 messages of 16 KiB, plus the one waiting for window.
        #expect(sentWhileNotReading <= 66, "the server kept sending to a client that does not read")
        #expect(sentWhileNotReading >= 60)
        var received: [Int32] = []
        for try await response in responses {
            #expect(response.fBytes == payload)
            received.append(response.fInt32)
        }
        #expect(received == (0..<300).map(Int32.init))
    }

    @Test func clientStreamWaitsForAServerThatDoesNotRead() async throws {
        let release = Atomic<Bool>(false)
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            while !release.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
            var count: Int32 = 0
            for try await _ in requests { count += 1 }
            return Scalars(fInt32: count)
        }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let written = Atomic<Int>(0)
        let payload = Data(repeating: 1, count: 32 * 1024)
        let call = Task {
            try await client.clientStreaming(Echo.clientStream) { writer in
                for _ in 0..<200 {
                    try await writer.send(Scalars(fBytes: payload))
                    written.add(1, ordering: .relaxed)
                }
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let writtenWhileNotReading = written.load(ordering: .relaxed)
        #expect(writtenWhileNotReading <= 33, "the client kept sending to a server that does not read")
        release.store(true, ordering: .releasing)
        #expect(try await call.value.fInt32 == 200)
    }

    /// Senders held by a peer are woken only when their own wait is over: window granted to one call leaves the
    /// others asleep, where waking every waiter on every frame read cost a task switch per waiter per frame.
    @Test(.timeLimit(.minutes(3))) func windowForOneCallWakesOnlyItsSender() async throws {
        let calls = 30
        let released = Mutex<Set<Int32>>([])
        var router = RPCRouter()
        router.clientStreaming(Echo.clientStream) { requests, _ in
            var iterator = requests.makeAsyncIterator()
            guard let first = try await iterator.next() else { return Scalars() }
            while !released.withLock({ $0.contains(first.fInt32) }) { try await Task.sleep(for: .milliseconds(5)) }
            var count: Int32 = 1
            while try await iterator.next() != nil { count += 1 }
            return Scalars(fInt32: count)
        }
        var settings = ConnectionSettings.defaults
        settings.initialStreamWindow = 16 * 1024
        let (_, client, _) = InMemoryCallTests.connect(router, settings: settings)
        let payload = Data(repeating: 3, count: 1024)
        // Each call sends 40 KiB against a window of 16 KiB: all of them end up waiting for window.
        let tasks = (0..<Int32(calls)).map { index in
            Task {
                try await client.clientStreaming(Echo.clientStream) { writer in
                    for _ in 0..<40 { try await writer.send(Scalars(fInt32: index, fBytes: payload)) }
                }
            }
        }
        func waiting() -> Int { client.connection.core.withLock { $0.capacityWaiters.count } }
        func wakeups() -> Int { client.connection.core.withLock { $0.capacityWakeups } }
        // Until every sender waits and the grants for the messages the handlers took first have been used.
        var settled = (wakeups: -1, rounds: 0)
        for _ in 0..<6_000 where settled.rounds < 20 {
            try await Task.sleep(for: .milliseconds(10))
            let now = wakeups()
            settled = waiting() == calls && now == settled.wakeups ? (now, settled.rounds + 1) : (now, 0)
        }
        #expect(waiting() == calls)
        let before = wakeups()
        released.withLock { _ = $0.insert(0) }
        #expect(try await tasks[0].value.fInt32 == 40)
        // Its own wakes, at most one per message it still had to send; the others slept through its frames.
        let woken = wakeups() - before
        #expect(woken <= 40, "\(woken) wakes for one call's window")
        #expect(waiting() == calls - 1)
        released.withLock { $0.formUnion(0..<Int32(calls)) }
        for task in tasks { #expect(try await task.value.fInt32 == 40) }
        #expect(waiting() == 0)
    }
}
