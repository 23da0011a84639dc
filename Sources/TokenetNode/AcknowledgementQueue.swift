import Synchronization

/// Handled message ids waiting to be acknowledged. Workers take everything gathered so far (up to a batch), so
/// acknowledgements grow with the load instead of costing one call per message.
///
/// A new id wakes an idle worker only while fewer than `eagerCalls` acknowledgements are on their way: when the
/// broker is busy, ids gather for the worker that comes back next instead of leaving one by one, which would cost
/// a call, an fsync and a commit each.
///
/// Each id keeps the trace id of the flow that sent its message, so that a batch of one flow's messages (most
/// often a single one) is acknowledged under that flow's trace: the TSP's log line for the Acknowledge reads as part
/// of the flow. A batch that mixes flows is acknowledged under a trace of its own.
final class AcknowledgementQueue: Sendable {
    /// A handled message waiting for its acknowledgement.
    struct Pending: Sendable, Equatable {
        let id: String
        /// The trace id its message carried; empty for none.
        let traceID: String
    }

    private struct State {
        var ids: [Pending] = []
        var waiters: [CheckedContinuation<[Pending]?, Never>] = []
        var finished = false
        /// Batches taken and not yet reported done.
        var inFlight = 0
        /// Workers pausing before they try a failed acknowledgement again (`pause(_:)`), by a number of their own.
        var pausing: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextPause = 0
    }

    private let batch: Int
    private let eagerCalls: Int
    private let state = Mutex(State())

    init(batch: Int, eagerCalls: Int = 1) {
        self.batch = batch
        self.eagerCalls = eagerCalls
    }

    func add(_ id: String, traceID: String = "") {
        let waiter = state.withLock { state -> (CheckedContinuation<[Pending]?, Never>, [Pending])? in
            state.ids.append(Pending(id: id, traceID: traceID))
            guard !state.waiters.isEmpty, state.inFlight < eagerCalls else { return nil }
            let waiter = state.waiters.removeFirst()
            return (waiter, takeBatch(&state))
        }
        if let (continuation, ids) = waiter { continuation.resume(returning: ids) }
    }

    /// Puts back ids whose acknowledgement failed, ahead of the others, so that a worker tries them again. False
    /// when the queue is finished (the stream is over): the caller keeps them for the next stream.
    func retry(_ ids: [Pending]) -> Bool {
        let waiter = state.withLock { state -> (CheckedContinuation<[Pending]?, Never>, [Pending])?? in
            guard !state.finished else { return .none }
            state.ids.insert(contentsOf: ids, at: 0)
            guard !state.waiters.isEmpty, state.inFlight < eagerCalls else { return .some(nil) }
            let waiter = state.waiters.removeFirst()
            return .some((waiter, takeBatch(&state)))
        }
        guard let waiter else { return false }
        if let (continuation, batch) = waiter { continuation.resume(returning: batch) }
        return true
    }

    /// No more ids will come: workers drain what is left and stop.
    func finish() {
        let (waiters, pausing) = state.withLock { state in
            state.finished = true
            defer { (state.waiters, state.pausing) = ([], [:]) }
            return (state.waiters, state.pausing)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        for pause in pausing.values { pause.resume() }
    }

    /// Runs `wait` (the backoff before a failed acknowledgement is tried again) until it returns or the queue is
    /// finished, whichever comes first: the stream is over, the ids go to the next one (`retry` says so), and a
    /// worker waiting out a backoff of up to 10 s held the end of the stream, and so the next Subscribe, that long.
    func pause(_ wait: @escaping @Sendable () async throws -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await wait() }
            group.addTask { await self.waitUntilFinished() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once the queue is finished, or the task cancelled.
    private func waitUntilFinished() async {
        let id = state.withLock { state in
            state.nextPause += 1
            return state.nextPause
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    guard !state.finished, !Task.isCancelled else { return true }
                    state.pausing[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.pausing.removeValue(forKey: id) }?.resume()
        }
    }

    /// The next batch; nil once finished and drained. Call `done()` once the batch's call is over.
    func take() async -> [Pending]? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Pending]?? in
                if !state.ids.isEmpty { return .some(takeBatch(&state)) }
                if state.finished { return .some(nil) }
                state.waiters.append(continuation)
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The call for a batch from `take()` is over.
    func done() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// The trace id a batch is acknowledged under: the one its messages share, or empty when they share none.
    static func sharedTrace(of batch: [Pending]) -> String {
        guard let first = batch.first?.traceID, batch.allSatisfy({ $0.traceID == first }) else { return "" }
        return first
    }

    private func takeBatch(_ state: inout State) -> [Pending] {
        let count = min(batch, state.ids.count)
        defer { state.ids.removeFirst(count) }
        state.inFlight += 1
        return Array(state.ids.prefix(count))
    }
}
