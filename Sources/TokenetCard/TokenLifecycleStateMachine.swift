/// The lifecycle of a token as a pure state machine: no I/O, no clocks. The caller persists `state` and maps a
/// rejection to its own error (the RPC layer answers FAILED_PRECONDITION).
///
/// ```
/// INACTIVE  --activate--> ACTIVE
/// ACTIVE    --suspend---> SUSPENDED
/// SUSPENDED --resume----> ACTIVE
/// INACTIVE | ACTIVE | SUSPENDED --delete--> DEACTIVATED   (final)
/// ACTIVE    --activate--> ACTIVE (harmless: reported as .unchanged)
/// ```
/// Every other pair is rejected and leaves the state as it was.
public struct TokenLifecycleStateMachine: Sendable, Equatable {
    public enum State: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case inactive = "INACTIVE"
        case active = "ACTIVE"
        case suspended = "SUSPENDED"
        case deactivated = "DEACTIVATED"

        public var description: String { rawValue }
    }

    public enum Event: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case activate
        case suspend
        case resume
        case delete

        public var description: String { rawValue }
    }

    /// What applying an event did.
    public enum Outcome: Sendable, Hashable {
        /// The token moved from one state to another; the caller persists the new state and notifies parties.
        case transitioned(from: State, to: State)
        /// The event asked for the state the token is already in (activating an active token); nothing to do.
        case unchanged(State)
        /// The event is not allowed in this state; the state did not change.
        case rejected(Rejection)
    }

    public struct Rejection: Sendable, Hashable, CustomStringConvertible {
        public let state: State
        public let event: Event

        public var message: String {
            switch (event, state) {
            case (_, .deactivated):
                return "cannot \(event) a token that is DEACTIVATED; a deactivated token never changes state again"
            case (.resume, .active):
                return "cannot resume a token that is ACTIVE; only a SUSPENDED token can be resumed"
            case (.activate, .suspended):
                // "use resume" sent an issuer's call centre to a resume the TSP refuses it when the TSP suspended
                // the token: who may lift a suspension depends on who made it (`SuspensionAuthority`).
                return "cannot activate a token that is SUSPENDED; activation is for a token waiting for ID&V "
                    + "(INACTIVE), and each suspension is lifted by a resume from the party that made it (or the TSP)"
            case (.suspend, .inactive), (.resume, .inactive):
                // Only a token in use is suspended or resumed; the bare refusal left the person nowhere to go.
                return "cannot \(event) a token that is INACTIVE; it is not in use yet (it waits for ID&V or for "
                    + "its issuer's decision): complete its activation, or delete it"
            case (.suspend, .suspended):
                return "cannot suspend a token that is SUSPENDED; it is suspended already"
            default:
                return "cannot \(event) a token that is \(state)"
            }
        }

        public var description: String { message }

        /// The module error for this rejection (code `.invalidTransition`).
        public var error: CardError { CardError(.invalidTransition, message) }
    }

    public private(set) var state: State

    public init(state: State = .inactive) {
        self.state = state
    }

    public mutating func activate() -> Outcome { handle(.activate) }
    public mutating func suspend() -> Outcome { handle(.suspend) }
    public mutating func resume() -> Outcome { handle(.resume) }
    public mutating func delete() -> Outcome { handle(.delete) }

    public mutating func handle(_ event: Event) -> Outcome {
        let next: State
        switch (state, event) {
        case (.inactive, .activate), (.suspended, .resume):
            next = .active
        case (.active, .activate):
            return .unchanged(.active)
        // Deleting is idempotent: a delete that crossed another party's (the issuer's, the TSP's) finds what it asked
        // for. Refused, the person's delete failed and left the card in the wallet until it was repeated.
        case (.deactivated, .delete):
            return .unchanged(.deactivated)
        case (.active, .suspend):
            next = .suspended
        case (.inactive, .delete), (.active, .delete), (.suspended, .delete):
            next = .deactivated
        default:
            return .rejected(Rejection(state: state, event: event))
        }
        let previous = state
        state = next
        return .transitioned(from: previous, to: next)
    }
}
