/// Settles a pending renewal (one whose RenewCard answer from the TSP was lost) when the operator repeats it or
/// abandons it, asking the TSP first what it holds so that the issuer's card ends up with the number the tokens
/// stand for. Pure: the driver (`IssuerCardCareService`) makes the calls and feeds their outcomes back as events.
///
/// Repeating completes the renewal at once if the TSP applied it, and sends it again otherwise (a renewal can be
/// repeated; if the question cannot be asked the renewal is sent again too, as its answer settles it). When that
/// send fails as well, even before it left, the renewal stays pending: nothing said whether the TSP holds the
/// first one, which giving the number back would leave on a number the card no longer takes. Abandoning
/// gives the number back only when the TSP is known not to hold it; if the TSP holds it the renewal is completed
/// instead, since giving the number back would leave the tokens on a card the issuer no longer has; if the TSP
/// cannot be asked, or holds it for some tokens only, the renewal stays pending.
///
/// A card with more tokens than one TSP call takes is asked about and renewed in batches, so the TSP can hold the
/// renewal for some of its tokens only (a renewal that failed after its first batch). Repeating sends every batch
/// again; if the TSP refuses that, the number is not given back, since the tokens it holds would be left on a number
/// the card never takes. Tokens the TSP answers as deleted or unknown hold nothing (`TSPHolding`), so they never
/// keep a renewal from completing.
///
/// Forcing completion is the operator's way out of a renewal that repeating cannot complete: the TSP is asked what
/// it holds (so that the answer can name the tokens left on another card) and the card takes the number whatever
/// the answer; if the TSP cannot be asked the renewal stays pending, as nothing would say which tokens are left.
struct RenewalResolution: Sendable, Equatable {
    enum Goal: Sendable, Equatable {
        /// The operator repeated the pending renewal.
        case complete
        /// The operator asked to abandon it.
        case abandon
        /// The operator asked to complete it whatever the TSP holds.
        case forceComplete
    }

    enum Event: Sendable, Equatable {
        case started
        /// The TSP answered GetFundingCards for every batch of the card's tokens, read together (or the card has no
        /// token to ask about).
        case tspHolds(TSPHolding)
        /// GetFundingCards failed for a batch: the TSP's state is unknown.
        case askFailed
        /// The TSP answered every batch of the renewal sent again.
        case renewalAnswered
        /// A batch of the renewal sent again failed, settled as `RenewalSent.settlement` says (a later batch's
        /// failure is pending whatever it was).
        case renewalFailed(RenewalSettlement)
    }

    /// Why a renewal stays pending.
    enum Unsettled: Sendable, Equatable {
        /// The answer to the renewal sent again was lost too.
        case answerLost
        /// The TSP could not be asked what it holds: abandoning or forcing, or repeating when the renewal could not
        /// be sent again either.
        case tspNotAsked
        /// Abandoning: the TSP holds the renewed card for some tokens only, or cannot tell.
        case tspUnclear
        /// Repeating: the TSP holds the renewed card for some tokens only and refused the renewal sent again, so
        /// giving the number back would leave those tokens on a number the card never takes.
        case heldInPart
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
    /// The TSP said it holds the renewed card for some tokens only (or cannot tell).
    private var heldInPart = false
    /// The TSP could not be asked what it holds, so a renewal sent again that fails says nothing of the first.
    private var tspNotAsked = false

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
            tspNotAsked = true
            state = .sending
            return .sendRenewal
        case (.sending, .renewalAnswered):
            return done(.complete)
        case (.sending, .renewalFailed(let settlement)):
            switch settlement {
            case .complete: return done(.complete)
            case .release where tspNotAsked: return done(.keepPending(.tspNotAsked))
            case .release: return done(heldInPart ? .keepPending(.heldInPart) : .release)
            case .keepPending: return done(.keepPending(.answerLost))
            }
        default:
            return .ignore
        }
    }

    private mutating func settle(after holding: TSPHolding) -> Action {
        switch (goal, holding) {
        case (.forceComplete, _), (_, .renewal), (.complete, .noToken):
            return done(.complete)
        case (.abandon, .other), (.abandon, .noToken):
            return done(.release)
        case (.abandon, .unclear):
            return done(.keepPending(.tspUnclear))
        case (.complete, .other), (.complete, .unclear):
            heldInPart = holding == .unclear
            state = .sending
            return .sendRenewal
        }
    }

    private mutating func done(_ action: Action) -> Action {
        state = .settled
        return action
    }
}
