import Dispatch

/// Runs async work from synchronous code on a thread outside the cooperative pool — a node's start-up and
/// shutdown on the main thread, the CLI's commands — and returns its result. Blocking such a thread never starves
/// the tasks it waits for; calling this from a task of the pool could.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: T?
    Task {
        result = await body()
        semaphore.signal()
    }
    semaphore.wait()
    return result!
}
