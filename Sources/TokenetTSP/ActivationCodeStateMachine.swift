/// The check of one activation code: single use, expiring, a bounded number of attempts. Pure; the store runs it
/// inside the transaction that persists the new state.
struct ActivationCodeStateMachine {
    enum Status: String, Sendable, Equatable {
        case pending
        case activated
        /// Too many wrong codes.
        case exhausted
        /// A newer registration of the same account replaced the code.
        case superseded
    }

    struct State: Sendable, Equatable {
        var status: Status
        var attemptsLeft: Int
        var expiresAtMs: UInt64
    }

    enum Outcome: Sendable, Equatable {
        case activate
        case incorrect(triesLeft: Int)
        case expired
        case retriesExceeded
        case alreadyUsed
    }

    enum Action: Sendable, Equatable {
        case persist(State)
        case answer(Outcome)
    }

    private(set) var state: State

    /// A code was submitted; `matches` says whether its digest equals the stored one.
    mutating func codeSubmitted(matches: Bool, nowMs: UInt64) -> [Action] {
        switch state.status {
        case .activated: return [.answer(.alreadyUsed)]
        case .exhausted: return [.answer(.retriesExceeded)]
        case .superseded: return [.answer(.expired)]
        case .pending: break
        }
        guard nowMs < state.expiresAtMs else { return [.answer(.expired)] }
        if matches {
            state.status = .activated
            return [.persist(state), .answer(.activate)]
        }
        state.attemptsLeft -= 1
        if state.attemptsLeft <= 0 {
            state.attemptsLeft = 0
            state.status = .exhausted
            return [.persist(state), .answer(.retriesExceeded)]
        }
        return [.persist(state), .answer(.incorrect(triesLeft: state.attemptsLeft))]
    }
}
