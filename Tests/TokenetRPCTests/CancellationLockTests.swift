import Foundation
import Synchronization
import Testing
import TokenetWire

@testable import TokenetRPC

/// Cancelling a caller never waits for its connection's lock. The runtime runs cancellation handlers while it holds
/// the cancelled task's status lock, and a thread holding the connection's lock may be resuming that very task at
/// that moment: a handler that waited would deadlock with it (a stopping node once hung that way).
@Suite struct CancellationLockTests {
    typealias Echo = TestingV1.Echo
    typealias Scalars = TestingV1.Scalars

    @Test(.timeLimit(.minutes(3))) func cancelReturnsWhileTheConnectionIsLockedAndTheCallEndsAfter() async throws {
        let handlerStarted = Atomic<Bool>(false)
        var router = RPCRouter()
        router.unary(Echo.unary) { request, _ in
            handlerStarted.store(true, ordering: .releasing)
            try await Task.sleep(for: .seconds(30))
            return request
        }
        let (_, client, _) = InMemoryCallTests.connect(router)
        let call = Task { try await client.unary(Echo.unary, Scalars()) }
        while !handlerStarted.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }

        // Cancel from another thread while this one holds the connection's lock, and see whether `cancel()`
        // returns without it: waiting for the lock here is what could deadlock.
        let cancelReturned = Atomic<Bool>(false)
        let returnedWhileLocked = client.connection.core.withLock { _ in
            Thread {
                call.cancel()
                cancelReturned.store(true, ordering: .releasing)
            }.start()
            let deadline = Date().addingTimeInterval(5)
            while !cancelReturned.load(ordering: .acquiring), Date() < deadline { usleep(1000) }
            return cancelReturned.load(ordering: .acquiring)
        }
        #expect(returnedWhileLocked, "Task.cancel() waited for the connection's lock")

        // The cancel is made once the lock is free: the call ends CANCELLED.
        let error = await #expect(throws: RPCError.self) { try await call.value }
        #expect(error?.code == .cancelled)
    }
}
