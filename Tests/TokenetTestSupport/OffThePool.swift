import Foundation

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
