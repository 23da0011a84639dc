import Foundation
import Synchronization

/// The messages of one call on their way from the connection's read loop to the single task consuming them.
///
/// It behaves like an unbounded `AsyncThrowingStream<Data, any Error>` — buffered messages come first, then the
/// end (nil) or the error, once; cancelling the waiting task ends the sequence — but costs one lock and one
/// continuation. The standard stream is generic and not specialized across the module boundary, so every call paid
/// for runtime generic-metadata lookups when creating, feeding, reading and releasing it; with one queue per call
/// that was the largest share of the RPC layer's own CPU time. Flow control bounds how much a queue holds.
final class MessageQueue: Sendable {
    private struct State {
        /// The oldest waiting message when it is the only one: a unary call's single request or response waits
        /// here, so that the common case needs no array storage (one allocation per call less).
        var single: Data?
        /// Further waiting messages, in order after `single`.
        var buffer: [Data] = []
        /// Messages before `head` have been taken; the array is compacted when that is cheap.
        var head = 0
        /// Set once by `finish`: nil for a clean end, or the error to throw after the buffered messages.
        var end: (any Error)?? = nil
        /// True once the end (or error) has been handed out; later reads get nil.
        var endDelivered = false
        /// The consumer waiting for the next message.
        var waiter: UnsafeContinuation<Data?, any Error>?

        mutating func append(_ data: Data) {
            if single == nil && head == buffer.count {
                single = data
            } else {
                if let first = single.take() { buffer.append(first) }
                buffer.append(data)
            }
        }

        /// The next outcome, if one is ready.
        mutating func take() -> Result<Data?, any Error>? {
            if let data = single.take() { return .success(data) }
            if head < buffer.count {
                let data = buffer[head]
                head += 1
                if head == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    head = 0
                } else if head >= 64 && head * 2 >= buffer.count {
                    buffer.removeFirst(head)
                    head = 0
                }
                return .success(data)
            }
            guard let end else { return nil }
            if endDelivered { return .success(nil) }
            endDelivered = true
            if let error = end { return .failure(error) }
            return .success(nil)
        }
    }

    private let state = Mutex(State())

    init() {}

    /// Hands a message to the consumer; dropped once the queue has ended.
    func yield(_ data: Data) {
        let waiter: UnsafeContinuation<Data?, any Error>? = state.withLock { state in
            guard state.end == nil else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.append(data)
            return nil
        }
        waiter?.resume(returning: data)
    }

    /// Ends the queue: after the buffered messages the consumer gets `error`, or nil when there is none. Only the
    /// first call counts.
    func finish(throwing error: (any Error)? = nil) {
        let ready: (UnsafeContinuation<Data?, any Error>, Result<Data?, any Error>)? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = .some(error)
            guard let waiter = state.waiter, let outcome = state.take() else { return nil }
            state.waiter = nil
            return (waiter, outcome)
        }
        if let (waiter, outcome) = ready { waiter.resume(with: outcome) }
    }

    /// The next message; nil at the end or when the waiting task is cancelled.
    nonisolated(nonsending) func next() async throws -> Data? {
        if let ready = state.withLock({ $0.take() }) { return try ready.get() }
        return try await withTaskCancellationHandler {
            try await wait()
        } onCancel: {
            // Like AsyncThrowingStream: a cancelled consumer ends the sequence.
            finish()
        }
    }

    /// `next()` for a consumer whose own cancellation handler ends the queue (a unary call's, which cancels the
    /// call and so finishes its responses): it saves installing and removing a second handler on every call.
    nonisolated(nonsending) func nextEndedOnCancel() async throws -> Data? {
        if let ready = state.withLock({ $0.take() }) { return try ready.get() }
        return try await wait()
    }

    nonisolated(nonsending) private func wait() async throws -> Data? {
        try await withUnsafeThrowingContinuation { continuation in
            let ready: Result<Data?, any Error>? = state.withLock { state in
                if let outcome = state.take() { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

extension MessageQueue: AsyncSequence {
    typealias Element = Data

    struct AsyncIterator: AsyncIteratorProtocol {
        let queue: MessageQueue

        mutating func next() async throws -> Data? { try await queue.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: self) }
}
