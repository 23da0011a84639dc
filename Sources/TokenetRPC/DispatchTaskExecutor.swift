import Dispatch

/// A task executor on libdispatch's global concurrent queue, for call handlers that may block their thread.
///
/// Why: the concurrency runtime's own pool has one thread per CPU and never adds one for a thread that blocks.
/// A node's handlers block in SQLite (its writers take turns on one connection, and wait out another process's lock
/// for up to the busy timeout) and in `fsync`: with as many handlers waiting as the machine has CPUs (two writers
/// on a two-CPU machine, while `sqlite3` held the database's lock), every task of the process stopped, and a health
/// check took 11 s. The global queue starts a thread of its own for work that waits while others block (libdispatch
/// looks at its threads about once a second), so the other calls are answered meanwhile. A job run here is resumed
/// here after each `await`, as for any task executor; child tasks inherit it, unstructured `Task {}` do not.
public final class DispatchTaskExecutor: TaskExecutor {
    /// Shared by every node in the process: the queue is the process's anyway.
    public static let global = DispatchTaskExecutor()

    private let queue = DispatchQueue.global(qos: .default)

    private init() {}

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
