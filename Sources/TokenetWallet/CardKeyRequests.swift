import Synchronization

/// One key-batch request per card at a time. Payments made at once on one card each found it at or below the
/// threshold and each asked the TSP for a batch: 25 payments at once fetched 20 batches where one was due. A payment
/// that comes while a request for its card is on its way waits for it to end, then finds the batch it brought and
/// asks for none.
///
/// A plain wait queue run by the waiting tasks themselves, with no task of its own: the request runs in the task of
/// the payment that made it, so cancelling that payment cancels its call to the TSP as before, and the next waiter
/// goes on when it ends, however it ended.
final class CardKeyRequests: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var busy: Set<Int64> = []
        var waiters: [Int64: [Waiter]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Runs `body` once no other request for `card` is on its way. A task cancelled while it waits throws
    /// UNAVAILABLE without running `body`. `body` throws untyped: typed throws through a generic async closure is
    /// what the wallet's other call paths avoid on this toolchain.
    func one<T>(card: Int64, _ body: () async throws -> T) async throws -> T {
        guard await acquire(card) else {
            throw WalletError(.unavailable, "the payment was cancelled while another took the card's key batch")
        }
        defer { release(card) }
        return try await body()
    }

    /// True once the card is this task's; false when the task was cancelled first.
    private func acquire(_ card: Int64) async -> Bool {
        let id: UInt64? = state.withLock { state in
            if state.busy.insert(card).inserted { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let outcome: Bool? = state.withLock { state in
                    // Freed since the look above: nobody is left to hand it over.
                    if state.busy.insert(card).inserted { return true }
                    // Cancelled before it queued: the handler below found nothing to end.
                    if Task.isCancelled { return false }
                    state.waiters[card, default: []].append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(returning: outcome) }
            }
        } onCancel: {
            // Takes only this queue's lock, which nobody holds while resuming a task (`release` resumes outside it).
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.waiters[card]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters[card]?.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Hands the card to the first waiter, or frees it.
    private func release(_ card: Int64) {
        let next: Waiter? = state.withLock { state in
            guard var queue = state.waiters[card], !queue.isEmpty else {
                state.busy.remove(card)
                state.waiters[card] = nil
                return nil
            }
            let first = queue.removeFirst()
            state.waiters[card] = queue.isEmpty ? nil : queue
            return first
        }
        next?.continuation.resume(returning: true)
    }
}
