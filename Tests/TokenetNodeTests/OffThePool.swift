import Foundation

/// Runs node start-up or shutdown code on a thread of its own, as `NodeMain` runs it on the main thread.
///
/// That code blocks on a semaphore while async work (binding, draining) runs on the cooperative pool; calling it from
/// a test task would hold one of the pool's few threads, and parallel tests could hold them all.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
