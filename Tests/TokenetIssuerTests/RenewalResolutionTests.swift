import Testing
import TokenetCard
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// `RenewalResolution` as plain event → action lists: what repeating or abandoning a pending renewal does with what
/// the TSP says it holds.
@Suite struct RenewalResolutionTests {
    typealias Event = RenewalResolution.Event
    typealias Action = RenewalResolution.Action

    func run(_ goal: RenewalResolution.Goal, _ events: [Event]) -> [Action] {
        var resolution = RenewalResolution(goal)
        return events.map { resolution.handle($0) }
    }

    @Test func repeatingCompletesWhatTheTSPAppliedWithoutSendingItAgain() {
        #expect(run(.complete, [.started, .tspHolds(.renewal)]) == [.askTSP, .complete])
        #expect(run(.complete, [.started, .tspHolds(.noToken)]) == [.askTSP, .complete])
    }

    @Test func repeatingSendsAgainWhatTheTSPDidNotApplyOrCannotTell() {
        #expect(
            run(.complete, [.started, .tspHolds(.other), .renewalAnswered]) == [.askTSP, .sendRenewal, .complete])
        #expect(
            run(.complete, [.started, .tspHolds(.unclear), .renewalAnswered]) == [.askTSP, .sendRenewal, .complete])
        // A TSP that cannot be asked (or does not know the question) gets the renewal again, as before there was one.
        #expect(run(.complete, [.started, .askFailed, .renewalAnswered]) == [.askTSP, .sendRenewal, .complete])
    }

    @Test func aRenewalSentAgainIsSettledByTheTSPsAnswer() {
        #expect(
            run(.complete, [.started, .tspHolds(.other), .renewalFailed(.release)])
                == [.askTSP, .sendRenewal, .release])
        #expect(
            run(.complete, [.started, .askFailed, .renewalFailed(.keepPending)])
                == [.askTSP, .sendRenewal, .keepPending(.answerLost)])
    }

    /// A renewal the TSP holds for some tokens only (one that failed after its first batch) is not given back when
    /// the repeat is refused: those tokens would be left on a number the card never takes.
    @Test func aRefusedRepeatOfARenewalHeldInPartStaysPending() {
        #expect(
            run(.complete, [.started, .tspHolds(.unclear), .renewalFailed(.release)])
                == [.askTSP, .sendRenewal, .keepPending(.heldInPart)])
        #expect(
            run(.complete, [.started, .tspHolds(.unclear), .renewalFailed(.keepPending)])
                == [.askTSP, .sendRenewal, .keepPending(.answerLost)])
        #expect(
            run(.complete, [.started, .tspHolds(.unclear), .renewalFailed(.complete)])
                == [.askTSP, .sendRenewal, .complete])
    }

    @Test func abandoningGivesBackOnlyWhatTheTSPDoesNotHold() {
        #expect(run(.abandon, [.started, .tspHolds(.other)]) == [.askTSP, .release])
        #expect(run(.abandon, [.started, .tspHolds(.noToken)]) == [.askTSP, .release])
        #expect(run(.abandon, [.started, .tspHolds(.renewal)]) == [.askTSP, .complete])
        #expect(run(.abandon, [.started, .tspHolds(.unclear)]) == [.askTSP, .keepPending(.tspUnclear)])
        #expect(run(.abandon, [.started, .askFailed]) == [.askTSP, .keepPending(.tspNotAsked)])
    }

    @Test func eventsOutOfTurnChangeNothing() {
        #expect(run(.abandon, [.tspHolds(.other), .started, .renewalAnswered]) == [.ignore, .askTSP, .ignore])
        #expect(
            run(.complete, [.started, .tspHolds(.renewal), .tspHolds(.other), .askFailed])
                == [.askTSP, .complete, .ignore, .ignore])
        #expect(run(.abandon, [.started, .askFailed, .started]) == [.askTSP, .keepPending(.tspNotAsked), .ignore])
    }

    // MARK: What the TSP holds

    static let current = try! PAN("4761000010000009")
    static let renewal = PendingRenewal(pan: try! PAN("4761000010000017"), expiry: try! CardExpiry(parsing: "12/31"))
    static let expiryOnly = PendingRenewal(pan: current, expiry: try! CardExpiry(parsing: "12/31"))

    func card(
        _ state: CardV1.TokenState = .active, matches: Bool, expiry: String = "12/31"
    ) -> TspV1.FundingCard {
        TspV1.FundingCard(digitalCardID: "DNITHE1", tokenState: state, expiry: expiry, panMatches: matches)
    }

    func holding(_ cards: [TspV1.FundingCard], _ renewal: PendingRenewal = renewal) -> TSPHolding {
        TSPHolding(cards, renewal: renewal, currentPAN: Self.current)
    }

    @Test func theTSPsAnswerIsReadAgainstTheRenewal() {
        #expect(holding([card(matches: true), card(.suspended, matches: true)]) == .renewal)
        #expect(holding([card(matches: false, expiry: "12/29"), card(.inactive, matches: false)]) == .other)
        #expect(holding([card(matches: true), card(matches: false, expiry: "12/29")]) == .unclear)
        // Deleted or unknown tokens hold nothing.
        #expect(holding([card(.deactivated, matches: true), card(.unspecified, matches: false)]) == .noToken)
        #expect(holding([card(.deactivated, matches: false), card(matches: true)]) == .renewal)
        #expect(holding([]) == .noToken)
    }

    /// An expiry the TSP never recorded: the number alone decides when the renewal changes it, and nothing can when
    /// the renewal changes the expiry only.
    @Test func anUnrecordedExpiryIsDecidedByTheNumberWhenItCan() {
        #expect(holding([card(matches: true, expiry: "")]) == .renewal)
        #expect(holding([card(matches: false, expiry: "")]) == .other)
        #expect(holding([card(matches: true, expiry: "")], Self.expiryOnly) == .unclear)
        #expect(holding([card(matches: true, expiry: "12/29")], Self.expiryOnly) == .other)
        #expect(holding([card(matches: true, expiry: "12/31")], Self.expiryOnly) == .renewal)
    }
}
