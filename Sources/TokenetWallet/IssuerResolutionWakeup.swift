import Synchronization

/// Cuts short the resolver's wait for a TSP it could not reach when an issuer app asks the wallet for its cards
/// (`CurrentTokens`, `Listen`): an app that is asking is when a card hidden for want of its issuer matters, so the
/// TSP is asked again at once instead of after the rest of a wait of up to a minute.
///
/// An app that asks while no wait is under way (the question is being asked, or the resolver has finished) leaves
/// a mark that ends the next wait at once; so a question the app asked just before the wait began is not lost.
public final class IssuerResolutionWakeup: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var asked = false
    }

    private let state = Mutex(State())

    public init() {}

    /// An issuer app asked for its cards.
    public func issuerAppAsked() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.asked = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits `milliseconds` with `sleep`, or less when an issuer app asks; true when an app cut it short. Throws
    /// when the task is cancelled (the node is stopping).
    func wait(
        _ milliseconds: UInt64, sleep: @escaping @Sendable (UInt64) async throws -> Void
    ) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await sleep(milliseconds)
                return false
            }
            group.addTask {
                await self.appAsked()
                try Task.checkCancellation()
                return true
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }

    /// Returns once an app asks, at once if one asked since the last wait, or when the task is cancelled.
    private func appAsked() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    // A cancelled wait leaves an app's question for the next one.
                    if Task.isCancelled { return true }
                    if state.asked {
                        state.asked = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
