import Synchronization

/// Waits for `work` at most `limit`: true when it finished in time, false when the limit came first.
///
/// A task group cannot bound work that ignores cancellation: the group waits for every child before it returns, so
/// a child that never finishes holds the caller however soon its timer fires. Here the work and the timer each run
/// in their own task and whichever ends first resumes the caller; work that overruns is left running on its own (a
/// CLI exits soon after, which ends it).
public func waitAtMost(_ limit: Duration, for work: @escaping @Sendable () async -> Void) async -> Bool {
    await withCheckedContinuation { continuation in
        let waiter = ResumedOnce(continuation)
        let timer = Task {
            try? await Task.sleep(for: limit)
            waiter.resume(returning: false)
        }
        Task {
            await work()
            waiter.resume(returning: true)
            timer.cancel()
        }
    }
}

/// A continuation that the first of several racing tasks resumes; later attempts do nothing.
private final class ResumedOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(returning value: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
