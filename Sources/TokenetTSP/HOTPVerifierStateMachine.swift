import TokenetCard

/// The TSP's check of one HOTP credential (RFC 4226 section 7): the pure decision, with the driver (the store) loading
/// the state, running one event and persisting the state it is told to in the same transaction before answering.
///
/// - A code matches when it is the code of one of the next `lookAhead` counters; the counter then moves past it, so
///   the same code (or an older one) is never accepted again.
/// - A code further ahead, within `resyncWindow`, is not accepted (a single lucky guess there is too likely); it
///   counts as a failure and asks for a resynchronisation with two consecutive codes.
/// - Every failure counts; after `maxFailures` in a row the credential locks until the issuer unlocks it.
struct HOTPVerifierStateMachine {
    struct Policy: Sendable, Equatable {
        var lookAhead = 10
        var resyncWindow = 100
        var maxFailures = 10
    }

    struct State: Sendable, Equatable {
        /// The counter of the next code expected.
        var counter: UInt64
        /// Failures since the last success or unlock.
        var failures: Int
        var locked: Bool
    }

    enum Outcome: Sendable, Equatable {
        case accepted
        case incorrect(failuresLeft: Int)
        case resyncRequired(failuresLeft: Int)
        /// Locked now or already; nothing is checked while locked.
        case locked
        /// An unlock found the credential already usable.
        case notLocked
    }

    enum Action: Sendable, Equatable {
        /// Store this state (in the transaction that answers).
        case persist(State)
        case answer(Outcome)
    }

    private(set) var state: State
    let policy: Policy

    init(state: State, policy: Policy = Policy()) {
        self.state = state
        self.policy = policy
    }

    /// A code submitted at login. `codeAt` computes the credential's code for a counter.
    mutating func codeSubmitted(_ code: String, codeAt: (UInt64) throws(CardError) -> String) throws(CardError)
        -> [Action]
    {
        guard !state.locked else { return [.answer(.locked)] }
        if let counter = try match(code, from: state.counter, count: policy.lookAhead, codeAt: codeAt) {
            state.counter = counter + 1
            state.failures = 0
            return [.persist(state), .answer(.accepted)]
        }
        let ahead = try match(
            code, from: state.counter + UInt64(policy.lookAhead), count: policy.resyncWindow - policy.lookAhead,
            codeAt: codeAt)
        return fail(resync: ahead != nil)
    }

    /// Two consecutive codes for a resynchronisation: the counter moves past the second.
    mutating func resyncSubmitted(
        first: String, second: String, codeAt: (UInt64) throws(CardError) -> String
    ) throws(CardError) -> [Action] {
        guard !state.locked else { return [.answer(.locked)] }
        var counter = state.counter
        let end = state.counter + UInt64(policy.resyncWindow)
        while counter + 1 < end {
            if Self.same(try codeAt(counter), first), Self.same(try codeAt(counter + 1), second) {
                state.counter = counter + 2
                state.failures = 0
                return [.persist(state), .answer(.accepted)]
            }
            counter += 1
        }
        return fail(resync: false)
    }

    /// The issuer verified the user another way.
    mutating func unlocked() -> [Action] {
        guard state.locked || state.failures > 0 else { return [.answer(.notLocked)] }
        let wasLocked = state.locked
        state.locked = false
        state.failures = 0
        return [.persist(state), .answer(wasLocked ? .accepted : .notLocked)]
    }

    private mutating func fail(resync: Bool) -> [Action] {
        state.failures += 1
        if state.failures >= policy.maxFailures {
            state.locked = true
            return [.persist(state), .answer(.locked)]
        }
        let left = policy.maxFailures - state.failures
        return [
            .persist(state), .answer(resync ? .resyncRequired(failuresLeft: left) : .incorrect(failuresLeft: left)),
        ]
    }

    private func match(
        _ code: String, from start: UInt64, count: Int, codeAt: (UInt64) throws(CardError) -> String
    ) throws(CardError) -> UInt64? {
        guard count > 0 else { return nil }
        for counter in start..<(start + UInt64(count)) where Self.same(try codeAt(counter), code) {
            return counter
        }
        return nil
    }

    /// Codes compare in constant time.
    static func same(_ expected: String, _ submitted: String) -> Bool {
        HMAC.constantTimeEquals(Array(expected.utf8), Array(submitted.utf8))
    }
}
