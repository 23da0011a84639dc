import Dispatch
import Foundation
import Synchronization
import Testing
import TokenetTransport
import TokenetWire

@testable import TokenetRPC

/// Handlers that block their thread (a node's, waiting in SQLite for a lock another process holds) leave the
/// others answered when they run on `DispatchTaskExecutor`: on the concurrency runtime's pool, as many of them as
/// the machine has CPUs stopped every task of the process.
@Suite struct BlockingHandlerTests {
    @Test(.timeLimit(.minutes(3))) func callsAreAnsweredWhileMoreHandlersBlockThanThereAreCPUs() async throws {
        let blockers = ProcessInfo.processInfo.activeProcessorCount + 1
        let release = DispatchSemaphore(value: 0)
        let blocking = Mutex(0)
        // Claimed by whichever comes first: the answer to the call below, or the watchdog.
        let settled = Atomic<Bool>(false)
        var router = RPCRouter()
        router.unary(TestingV1.Echo.unary) { request, _ in
            if request.fString == "block" {
                blocking.withLock { $0 += 1 }
                release.wait()
            }
            var response = request
            response.fInt32 += 1
            return response
        }
        let server = RPCServer(router: router, handlerExecutor: DispatchTaskExecutor.global)
        let (clientEnd, serverEnd) = InMemoryByteStream.pair()
        Task { await server.serve(serverEnd) }
        let client = RPCClient(stream: clientEnd)
        // A way out for a process whose pool did block (a regression): the blocked handlers are let go after 90 s
        // from a thread of its own, and the call below is then seen to have come after.
        let watchdog = Thread {
            Thread.sleep(forTimeInterval: 90)
            if settled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
                for _ in 0..<blockers { release.signal() }
            }
        }
        watchdog.start()
        let held = (0..<blockers).map { _ in
            Task { try await client.unary(TestingV1.Echo.unary, TestingV1.Scalars(fString: "block")) }
        }
        while blocking.withLock({ $0 }) < blockers - 1 { try await Task.sleep(for: .milliseconds(10)) }
        let answer = try await client.unary(
            TestingV1.Echo.unary, TestingV1.Scalars(fInt32: 1), options: CallOptions(timeout: .seconds(60)))
        let answeredFirst = settled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        #expect(answer.fInt32 == 2)
        #expect(answeredFirst, "the call was answered only once the blocked handlers were let go")
        if answeredFirst { for _ in 0..<blockers { release.signal() } }
        for call in held { #expect(try await call.value.fInt32 == 1) }
        await client.close()
    }
}
