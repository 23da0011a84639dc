import Synchronization

/// Lets one token-state change at a time through its commit and its CPS CARD_STATE publication, first come first
/// served. Without it two changes racing on one token could commit A then B but publish B then A, and the wallet,
/// which applies the state a message carries, would end on the older state. Changes are rare next to the broker's
/// rate (a publication waits for one group commit), so one gate for the whole TSP costs little.
final class StateChangeGate: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    /// Runs `body` alone among the gate's callers; the next caller in line enters when it returns or throws.
    func run<T>(_ body: () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let entered = state.withLock { state in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if entered { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            // The gate stays busy: it passes straight to the next caller in line.
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
