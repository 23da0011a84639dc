import Dispatch
import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Deadlines as the connection keeps them (`RPCConnection+Deadlines.swift`): one queue per connection and one check
/// armed for the earliest open call, in memory (a sleeping task arms the check) and over TLS (a loop timer does).
@Suite(.serialized) struct CallDeadlineTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    /// Where the calls run: the in-memory transport, or TLS on loopback with callers and handlers on the loops.
    enum Placement: CaseIterable, CustomTestStringConvertible {
        case inMemory, loops

        var testDescription: String { self == .inMemory ? "in memory" : "TLS, on the loops" }
    }

    /// A client and server over `placement`, and how to take them down.
    struct Setup {
        let client: RPCClient
        let server: RPCServer
        /// Runs a caller the way this placement's callers run: on the client's loop when there is one.
        let run: @Sendable (@escaping @Sendable () async throws -> Void) async throws -> Void
        let stop: @Sendable () async -> Void
    }

    static func setUp(_ placement: Placement, _ router: RPCRouter, callLog: (@Sendable (CallRecord) -> Void)? = nil)
        async throws -> Setup
    {
        switch placement {
        case .inMemory:
            let (server, client, serving) = InMemoryCallTests.connect(router, callLog: callLog)
            return Setup(
                client: client, server: server, run: { try await $0() },
                stop: {
                    await client.close()
                    serving.cancel()
                })
        case .loops:
            let harness = try await LoopExecutorCallTests.start(router, callLog: callLog)
            let client = try await harness.client()
            let clientLoop = harness.clientLoop
            return Setup(
                client: client, server: harness.server,
                run: { body in try await Task(executorPreference: clientLoop) { try await body() }.value },
                stop: {
                    await client.close()
                    await harness.stop()
                })
        }
    }

    /// How many handlers were cancelled.
    final class Counter: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
    }

    /// "slow" counts its starts, waits up to ten minutes and counts how often it was cancelled; "stubborn" waits until
    /// it is cancelled and its deadline has passed, and then answers anyway; anything else is echoed.
    static func router(cancelled: Counter = Counter(), started: Counter = Counter()) -> RPCRouter {
        var router = RPCRouter()
        router.unary(Echo.unary) { request, context in
            switch request.fString {
            case "slow":
                started.count.add(1, ordering: .relaxed)
                do {
                    try await Task.sleep(for: .seconds(600))
                } catch {
                    cancelled.count.add(1, ordering: .relaxed)
                    throw error
                }
            case "stubborn":
                started.count.add(1, ordering: .relaxed)
                // Outlives its deadline however late the server's check fires on a loaded machine: it waits (up to
                // 30 s) until it is cancelled and the deadline has passed on the server's clock too (the caller's
                // cancel can come a little before it), then answers as if it had not noticed.
                let end = ContinuousClock.now + .seconds(30)
                let deadline = context.deadline ?? end
                while !(Task.isCancelled && ContinuousClock.now >= deadline) && ContinuousClock.now < end {
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 0.005) { continuation.resume() }
                    }
                }
            default: break
            }
            return request
        }
        return router
    }

    /// Polls `condition` for up to 90 seconds: generous, because the full suite runs many tests at once on two
    /// CPUs, where a step that takes milliseconds alone can take seconds (an in-memory call's handler once did not
    /// start within 30 s of a full run).
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < end {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// A call with a long deadline arms the check for late; one opened after it with a short deadline must re-arm
    /// it, or it would wait for the long one. Every handler that started is cancelled when its call ends (on a
    /// loaded machine the short call's handler may not start before its deadline, and then never runs). The long
    /// deadline is far beyond the time limit, so it cannot pass on a loaded machine and blur the count.
    @Test(.timeLimit(.minutes(3)), arguments: Placement.allCases)
    func anEarlierDeadlineOpenedLaterEndsItsCallOnTime(_ placement: Placement) async throws {
        let cancelled = Counter()
        let handlersStarted = Counter()
        let setup = try await Self.setUp(placement, Self.router(cancelled: cancelled, started: handlersStarted))
        let client = setup.client
        try await setup.run {
            let long = Task {
                try await client.unary(
                    Echo.unary, Scalars(fString: "slow"), options: CallOptions(timeout: .seconds(600)))
            }
            let longStarted = try await Self.eventually { handlersStarted.value == 1 }
            #expect(longStarted, "the long call's handler runs")
            let started = ContinuousClock.now
            let error = await #expect(throws: RPCError.self) {
                try await client.unary(
                    Echo.unary, Scalars(fString: "slow"), options: CallOptions(timeout: .milliseconds(100)))
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(error?.message.contains("deadline") == true, "\(String(describing: error))")
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(100) && waited < .seconds(60), "ended after \(waited)")
            let shortEnded = try await Self.eventually { cancelled.value == handlersStarted.value - 1 }
            #expect(shortEnded, "the short call's handler, if it started, is cancelled")
            #expect(try await client.unary(Echo.unary, Scalars(fInt32: 5)).fInt32 == 5, "the connection carries on")
            long.cancel()
            await #expect(throws: RPCError.self) { try await long.value }
            let bothEnded = try await Self.eventually { cancelled.value == handlersStarted.value }
            #expect(bothEnded, "every handler that started is cancelled")
        }
        await setup.stop()
    }

    /// The server ends a call whose handler outlives the deadline with DEADLINE_EXCEEDED, even when the handler
    /// ignores the cancellation and answers after all.
    @Test(.timeLimit(.minutes(3)), arguments: Placement.allCases)
    func aHandlerThatOutlivesTheDeadlineEndsWithDeadlineExceeded(_ placement: Placement) async throws {
        let records = Mutex<[CallRecord]>([])
        let started = Counter()
        let setup = try await Self.setUp(
            placement, Self.router(started: started), callLog: { record in records.withLock { $0.append(record) } }
        )
        let client = setup.client
        try await setup.run {
            let error = await #expect(throws: RPCError.self) {
                try await client.unary(
                    Echo.unary, Scalars(fString: "stubborn"), options: CallOptions(timeout: .milliseconds(50)))
            }
            #expect(error?.code == .deadlineExceeded)
        }
        #expect(try await Self.eventually { records.withLock { !$0.isEmpty } })
        // On a loaded machine the caller's deadline (counted from before it sent the call) can fire, and its cancel
        // reach the server, before the handler has its request: the call is then not handled at all, and its log
        // says CANCELLED. A handler that ran and outlived the deadline ends DEADLINE_EXCEEDED.
        let codes = records.withLock { $0.map(\.code) }
        if started.value == 0 {
            #expect(codes == [.cancelled] || codes == [.deadlineExceeded], "\(codes)")
        } else {
            #expect(codes == [.deadlineExceeded])
        }
        await setup.stop()
    }

    /// A caller's "forever" (the longest `Duration` there is) is a deadline like any other: sent as the most
    /// microseconds the wire carries and kept without overflowing anywhere, on either end.
    @Test(.timeLimit(.minutes(3)), arguments: Placement.allCases)
    func theLongestDeadlineIsKeptWithoutOverflow(_ placement: Placement) async throws {
        let setup = try await Self.setUp(placement, Self.router())
        let client = setup.client
        try await setup.run {
            for timeout in [Duration.seconds(Int64.max), .seconds(Int64.max / 1_000_000), .seconds(1 << 40)] {
                let response = try await client.unary(
                    Echo.unary, Scalars(fInt32: 9), options: CallOptions(timeout: timeout))
                #expect(response.fInt32 == 9)
            }
        }
        #expect(RPCConnection.wireMicroseconds(.seconds(Int64.max)) == Int64.max)
        #expect(RPCConnection.wireMicroseconds(.milliseconds(1500)) == 1_500_000)
        #expect(RPCConnection.wireMicroseconds(.nanoseconds(1)) == 1)
        await setup.stop()
    }

    /// The armed check holds its connection until it fires; a closed connection's check is cancelled, so the
    /// connection is freed at once rather than when the longest deadline it saw would have passed.
    @Test(.timeLimit(.minutes(3)), arguments: Placement.allCases)
    func aClosedConnectionIsFreedDespiteItsArmedCheck(_ placement: Placement) async throws {
        weak var connection: RPCConnection?
        do {
            let setup = try await Self.setUp(placement, Self.router())
            let client = setup.client
            connection = client.connection
            try await setup.run {
                let response = try await client.unary(
                    Echo.unary, Scalars(fInt32: 3), options: CallOptions(timeout: .seconds(600)))
                #expect(response.fInt32 == 3)
            }
            #expect(client.connection.core.withLock { $0.deadlineCheck != nil }, "a check is armed for 600 s")
            await setup.stop()
        }
        #expect(try await Self.eventually { connection == nil }, "the connection outlives its close")
    }

    /// Calls that end in time leave entries behind; they are dropped once they outnumber the open calls, so the
    /// queues of both ends stay small however many calls a connection carries.
    @Test(.timeLimit(.minutes(3)), arguments: Placement.allCases)
    func finishedCallsDeadlinesDoNotPileUp(_ placement: Placement) async throws {
        let setup = try await Self.setUp(placement, Self.router())
        let client = setup.client
        try await setup.run {
            for index in 0..<2000 {
                let response = try await client.unary(
                    Echo.unary, Scalars(fInt32: Int32(index)), options: CallOptions(timeout: .seconds(60)))
                #expect(response.fInt32 == Int32(index))
            }
        }
        let limit = 2 + RPCConnection.finishedDeadlinesKept
        #expect(client.connection.core.withLock { $0.deadlines.count } <= limit)
        let served = setup.server.connections.withLock { Array($0.values) }
        #expect(served.count == 1)
        for connection in served {
            #expect(connection.core.withLock { $0.deadlines.count } <= limit)
        }
        await setup.stop()
    }
}
