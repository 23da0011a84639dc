import Synchronization
import TokenetWire

/// The messages the broker has released to one Subscribe stream and its handler has not taken yet.
///
/// The broker pushes whole batches (everything the window allows at once) and the stream's task takes everything
/// buffered in one call, so a burst of messages costs one wake-up, not one per message. The window bounds what can
/// be buffered here.
final class NotificationOutbox: Sendable {
    /// The stream ended because another Subscribe replaced it.
    struct Replaced: Error {}

    private struct State {
        var buffer: [TspV1.Notification] = []
        var waiter: CheckedContinuation<[TspV1.Notification], any Error>?
        var replaced = false
        var cancelled = false
    }

    let streamID: UInt64
    private let state = Mutex(State())

    init(streamID: UInt64) {
        self.streamID = streamID
    }

    func push(_ notifications: [TspV1.Notification]) {
        let waiter = state.withLock { state -> CheckedContinuation<[TspV1.Notification], any Error>? in
            guard let waiter = state.waiter else {
                state.buffer += notifications
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: notifications)
    }

    func replace() {
        let waiter = state.withLock { state in
            state.replaced = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: Replaced())
    }

    /// Everything buffered, waiting until there is something. Throws `Replaced` once replaced (after the buffered
    /// messages were taken, which the new stream sends again anyway) and `CancellationError` when cancelled.
    func next() async throws -> [TspV1.Notification] {
        enum Ready {
            case messages([TspV1.Notification])
            case replaced
            case cancelled
            case wait
        }
        func ready(_ state: inout State) -> Ready {
            if state.replaced { return .replaced }
            if state.cancelled { return .cancelled }
            if !state.buffer.isEmpty {
                defer { state.buffer = [] }
                return .messages(state.buffer)
            }
            return .wait
        }
        switch state.withLock({ ready(&$0) }) {
        case .messages(let list): return list
        case .replaced: throw Replaced()
        case .cancelled: throw CancellationError()
        case .wait: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let outcome = state.withLock { state -> Ready in
                    let outcome = ready(&state)
                    if case .wait = outcome { state.waiter = continuation }
                    return outcome
                }
                switch outcome {
                case .messages(let list): continuation.resume(returning: list)
                case .replaced: continuation.resume(throwing: Replaced())
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.cancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
