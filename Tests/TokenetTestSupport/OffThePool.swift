import Foundation
import TokenetTransport

/// Runs blocking test code (waiting for a child process, polling a file, node start-up that waits on a semaphore)
/// on a thread of its own.
///
/// Test functions run on the cooperative pool, which has about one thread per CPU: a test that blocks holds one,
/// and two such tests on a two-CPU machine starve every other test of the run, whose time bounds then fail.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Waits for `process` to exit on a thread of its own, killing it after `limit` seconds, and keeps `resources` (its
/// data directory, say) alive until it has: for a `deinit` that stops a node, which cannot await and must not hold
/// a thread of the cooperative pool for the second or so a node takes to stop.
public func reapOffThePool(_ process: SpawnedProcess, killingAfter limit: Double, keeping resources: AnyObject...) {
    nonisolated(unsafe) let kept = resources
    Thread {
        process.waitUntilExit(killingAfter: limit)
        withExtendedLifetime(kept) {}
    }.start()
}
