import Synchronization
import Testing

/// Holds the calls that reach it until the test opens it, and counts them.
final class Gate: Sendable {
    private struct State {
        var open = false
        var arrivals = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    var arrivals: Int { state.withLock { $0.arrivals } }

    func pass() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                state.arrivals += 1
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Waits (up to five minutes: the whole suite at once on two CPUs can hold a task back for over a minute)
    /// until `count` calls have reached the gate.
    func arrived(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while arrivals < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(count) call(s) expected at the gate, \(arrivals) arrived")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
