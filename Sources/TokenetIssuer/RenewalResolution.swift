/// Settles a pending renewal (one whose RenewCard answer from the TSP was lost) when the operator repeats it or
/// abandons it, asking the TSP first what it holds so that the issuer's card ends up with the number the tokens
/// stand for. Pure: the driver (`IssuerCardCareService`) makes the calls and feeds their outcomes back as events.
///
/// Repeating completes the renewal at once if the TSP applied it, and sends it again otherwise (a renewal can be
/// repeated; if the question cannot be asked the renewal is sent again too, as its answer settles it). Abandoning
/// gives the number back only when the TSP is known not to hold it; if the TSP holds it the renewal is completed
/// instead, since giving the number back would leave the tokens on a card the issuer no longer has; if the TSP
/// cannot be asked, or holds it for some tokens only, the renewal stays pending.
struct RenewalResolution: Sendable, Equatable {
    enum Goal: Sendable, Equatable {
        /// The operator repeated the pending renewal.
        case complete
        /// The operator asked to abandon it.
        case abandon
    }

    enum Event: Sendable, Equatable {
        case started
        /// The TSP answered GetFundingCards (or the card has no token to ask about).
        case tspHolds(TSPHolding)
        /// GetFundingCards failed: the TSP's state is unknown.
        case askFailed
        /// The TSP answered the renewal sent again.
        case renewalAnswered
        /// The renewal sent again failed, settled as `RenewalSettlement(failure:)` says.
        case renewalFailed(RenewalSettlement)
    }

    /// Why a renewal stays pending.
    enum Unsettled: Sendable, Equatable {
        /// The answer to the renewal sent again was lost too.
        case answerLost
        /// Abandoning: the TSP could not be asked what it holds.
        case tspNotAsked
        /// Abandoning: the TSP holds the renewed card for some tokens only, or cannot tell.
        case tspUnclear
    }

    enum Action: Sendable, Equatable {
        /// Ask the TSP what it holds for the card's tokens (GetFundingCards).
        case askTSP
        /// Send the renewal to the TSP again (RenewCard).
        case sendRenewal
        /// The card takes the reserved number and expiry.
        case complete
        /// The reservation is dropped: the card keeps its number.
        case release
        /// The reservation stays; say why.
        case keepPending(Unsettled)
        /// The event does not fit the resolution's state; nothing to do.
        case ignore
    }

    private enum State: Sendable, Equatable {
        case idle, asking, sending, settled
    }

    let goal: Goal
    private var state = State.idle

    init(_ goal: Goal) { self.goal = goal }

    mutating func handle(_ event: Event) -> Action {
        switch (state, event) {
        case (.idle, .started):
            state = .asking
            return .askTSP
        case (.asking, .tspHolds(let holding)):
            return settle(after: holding)
        case (.asking, .askFailed):
            guard goal == .complete else { return done(.keepPending(.tspNotAsked)) }
            state = .sending
            return .sendRenewal
        case (.sending, .renewalAnswered):
            return done(.complete)
        case (.sending, .renewalFailed(let settlement)):
            switch settlement {
            case .complete: return done(.complete)
            case .release: return done(.release)
            case .keepPending: return done(.keepPending(.answerLost))
            }
        default:
            return .ignore
        }
    }

    private mutating func settle(after holding: TSPHolding) -> Action {
        switch (goal, holding) {
        case (_, .renewal), (.complete, .noToken):
            return done(.complete)
        case (.abandon, .other), (.abandon, .noToken):
            return done(.release)
        case (.abandon, .unclear):
            return done(.keepPending(.tspUnclear))
        case (.complete, .other), (.complete, .unclear):
            state = .sending
            return .sendRenewal
        }
    }

    private mutating func done(_ action: Action) -> Action {
        state = .settled
        return action
    }
}
