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

    /// The question about a pending renewal ends before the operator's call does, so that its answer can say the
    /// TSP could not be asked.
    @Test func theQuestionToTheTSPLeavesTimeForTheAnswer() {
        #expect(CallOptions.leavingRoomToAnswer(.seconds(30)) == .seconds(29))
        #expect(CallOptions.leavingRoomToAnswer(.seconds(2)) == .milliseconds(1600))
    }

    /// A repeat the TSP could neither be asked about nor sent (a TSP that cannot be reached) leaves the renewal
    /// pending: the number was given back, though the TSP held the first renewal, which the wallets then showed.
    @Test func aRepeatTheTSPCouldNotBeAskedAboutNorSentStaysPending() {
        #expect(
            run(.complete, [.started, .askFailed, .renewalFailed(.release)])
                == [.askTSP, .sendRenewal, .keepPending(.tspNotAsked)])
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

    /// Forcing completes whatever the TSP holds, once it has said (the answer names the tokens left behind), and
    /// never sends the renewal again; a TSP that cannot be asked leaves the renewal pending.
    @Test func forcingCompletesWhateverTheTSPHoldsOnceItHasSaid() {
        for holding in [TSPHolding.renewal, .other, .unclear, .noToken] {
            #expect(run(.forceComplete, [.started, .tspHolds(holding)]) == [.askTSP, .complete], "\(holding)")
        }
        #expect(run(.forceComplete, [.started, .askFailed]) == [.askTSP, .keepPending(.tspNotAsked)])
        #expect(
            run(.forceComplete, [.started, .askFailed, .renewalAnswered, .tspHolds(.renewal)])
                == [.askTSP, .keepPending(.tspNotAsked), .ignore, .ignore])
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

    /// The live tokens a forced renewal leaves behind: those holding another card, or one the TSP cannot tell from
    /// the renewal; deleted and unknown tokens are not among them.
    @Test func theTokensNotHoldingTheRenewalAreNamed() {
        func named(_ id: String, _ card: TspV1.FundingCard) -> TspV1.FundingCard {
            var card = card
            card.digitalCardID = id
            return card
        }
        let cards = [
            named("A", card(matches: true)), named("B", card(matches: false, expiry: "12/29")),
            named("C", card(.deactivated, matches: false)), named("D", card(.unspecified, matches: false)),
            named("E", card(.suspended, matches: true, expiry: "12/29")),
        ]
        #expect(TSPHolding.notHolding(cards, renewal: Self.renewal, currentPAN: Self.current) == ["B", "E"])
        #expect(
            TSPHolding.notHolding(
                [named("F", card(matches: true, expiry: ""))], renewal: Self.expiryOnly, currentPAN: Self.current)
                == ["F"])
    }

    // MARK: What a renewal sent came to

    func result(_ id: String, _ state: CardV1.TokenState, _ status: StatusCode = .ok) -> TspV1.TokenStateResult {
        TspV1.TokenStateResult(digitalCardID: id, tokenState: state, statusCode: status.rawValue, message: "m")
    }

    /// Each token's result in the TSP's answer: deleted and refused-for-good tokens do not hold the renewal back;
    /// a token refused for a reason that may pass keeps it pending, never released (its batch is written).
    @Test func eachTokensResultSaysWhetherItHoldsTheRenewalBack() {
        var sent = RenewalSent(batches: 2)
        sent.answered(
            .init(
                renewedDigitalCardIds: ["A", "D"],
                results: [
                    result("A", .active), result("B", .deactivated, .failedPrecondition),
                    result("C", .unspecified, .notFound), result("D", .suspended),
                    result("E", .unspecified, .permissionDenied),
                ]))
        #expect(sent.renewed == ["A", "D"] && sent.deleted == ["B"] && sent.refused == ["C", "E"])
        // The one the TSP does not know is also told apart, for the issuer to record and not send again.
        #expect(sent.unknown == ["C"])
        #expect(sent.settlement == .complete && sent.failure == nil)
        sent.answered(.init(results: [result("F", .active, .unavailable)]))
        #expect(sent.settlement == .keepPending)
        #expect((sent.failure as? RPCError)?.code == .unavailable)

        var first = RenewalSent(batches: 1)
        first.answered(.init(results: [result("G", .active, .aborted)]))
        #expect(first.settlement == .keepPending)
        // A TSP that gives no results renewed the tokens it names.
        var old = RenewalSent(batches: 1)
        old.answered(.init(renewedDigitalCardIds: ["H"]))
        #expect(old.renewed == ["H"] && old.settlement == .complete)
        #expect(TokenRenewalResult(result("I", .deactivated)) == .deleted)
        #expect(TokenRenewalResult(result("J", .active, .invalidArgument)) == .refusedForGood)
        #expect(TokenRenewalResult(result("K", .unspecified, .notFound)) == .unknownToTSP)
        #expect(TokenRenewalResult(result("L", .unspecified, .permissionDenied)) == .refusedForGood)
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
