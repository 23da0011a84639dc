/// Registration with the TSP at start-up: try, and after each failure wait (backing off) and try again, until
/// one attempt succeeds. The TSP may start after the issuer, so failing is expected for a while.
struct RegistrationStateMachine: Sendable {
    enum Action: Sendable, Equatable {
        case register(attempt: Int)
        case wait(Duration, thenAttempt: Int)
        case finished(attempts: Int)
    }

    enum State: Sendable, Equatable {
        case idle
        case registering(attempt: Int)
        case waiting(nextAttempt: Int)
        case registered(attempts: Int)
    }

    private(set) var state = State.idle
    let initialDelay: Duration
    let maximumDelay: Duration

    init(initialDelay: Duration = .milliseconds(250), maximumDelay: Duration = .seconds(10)) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    mutating func start() -> Action? {
        guard state == .idle else { return nil }
        state = .registering(attempt: 1)
        return .register(attempt: 1)
    }

    mutating func attemptFailed() -> Action? {
        guard case .registering(let attempt) = state else { return nil }
        state = .waiting(nextAttempt: attempt + 1)
        return .wait(delay(afterFailures: attempt), thenAttempt: attempt + 1)
    }

    mutating func attemptSucceeded() -> Action? {
        guard case .registering(let attempt) = state else { return nil }
        state = .registered(attempts: attempt)
        return .finished(attempts: attempt)
    }

    mutating func waited() -> Action? {
        guard case .waiting(let next) = state else { return nil }
        state = .registering(attempt: next)
        return .register(attempt: next)
    }

    /// Doubles from `initialDelay` up to `maximumDelay`.
    func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(failures, 1) {
            delay = delay * 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }
}
