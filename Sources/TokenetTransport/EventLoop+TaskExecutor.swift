/// The loop as a task executor: a task started with `Task(executorPreference: loop)` (or inside
/// `withTaskExecutorPreference(loop)`) runs on the loop thread, between epoll iterations.
///
/// Why: a request/response over a connection otherwise crosses threads at every step — the caller's pool thread,
/// the loop that writes, the loop that reads, the pool thread that resumes the caller — and on small VMs each
/// cross-CPU wake costs tens of microseconds, more than encoding and TLS together. A task that runs on its
/// connection's loop writes into the TLS engine and socket directly, and when the loop reads its response the task
/// is resumed in the same iteration without any wake-up.
///
/// The price, as with any event loop: a job that blocks (a lock held long, a synchronous wait, heavy computation)
/// stalls every connection of the loop. Only tasks that opt in run here.
extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !enqueue(.job(job)) {
            // The loop has stopped: the task must still run to its end (it will see its connection closed).
            globalConcurrentExecutor.enqueue(job)
        }
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
