import Synchronization

/// One task at a time per key: the others that come for the same key wait their turn, in order, and other keys are
/// not held up. The wallet's key-batch requests take turns per card (25 payments at once fetched 20 batches where
/// one was due), and the TSP's one-time codes per token (resends at once stored their codes in one order and had
/// them delivered in another, so that the last code the cardholder got could be one already replaced).
///
/// A plain wait queue run by the waiting tasks themselves, with no task of its own: the body runs in the task that
/// asked, so cancelling that task cancels what the body awaits as before, and the next waiter goes on when the body
/// ends, however it ended.
public final class KeyedTurns<Key: Hashable & Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var busy: Set<Key> = []
        var waiters: [Key: [Waiter]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Runs `body` once no other body for `key` is running. A task cancelled while it waits throws what
    /// `cancelled` makes, without running `body`. `body` throws untyped: typed throws through a generic async
    /// closure is what the nodes' other call paths avoid on this toolchain.
    public func one<T>(
        _ key: Key, cancelled: @autoclosure () -> any Error, _ body: () async throws -> T
    ) async throws -> T {
        guard await acquire(key) else { throw cancelled() }
        defer { release(key) }
        return try await body()
    }

    /// True once the key is this task's; false when the task was cancelled first.
    private func acquire(_ key: Key) async -> Bool {
        let id: UInt64? = state.withLock { state in
            if state.busy.insert(key).inserted { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let outcome: Bool? = state.withLock { state in
                    // Freed since the look above: nobody is left to hand it over.
                    if state.busy.insert(key).inserted { return true }
                    // Cancelled before it queued: the handler below found nothing to end.
                    if Task.isCancelled { return false }
                    state.waiters[key, default: []].append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) }
            }
        } onCancel: {
            // Takes only this queue's lock, which nobody holds while resuming a task (`release` resumes outside it).
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.waiters[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters[key]?.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Hands the key to the first waiter, or frees it.
    private func release(_ key: Key) {
        let next: Waiter? = state.withLock { state in
            guard var queue = state.waiters[key], !queue.isEmpty else {
                state.busy.remove(key)
                state.waiters[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            state.waiters[key] = queue.isEmpty ? nil : queue
            return first
        }
        next?.continuation.resume(returning: true)
    }
}
