import Testing

@testable import TokenetWallet

/// The resolution of cards stored without an issuer, event by event: the actions the driver must take.
@Suite struct IssuerResolutionTests {
    static let first = IssuerResolution.Card(cardID: 1, digitalCardID: "DC-1", walletAccountID: "wa-1")
    static let second = IssuerResolution.Card(cardID: 2, digitalCardID: "DC-2", walletAccountID: "wa-2")

    @Test func nothingToResolveFinishesAtOnce() {
        var machine = IssuerResolution()
        #expect(machine.handle(.start([])) == [.finish(resolved: 0, remaining: 0)])
    }

    @Test func cardsAreAskedOneByOneAndRecorded() {
        var machine = IssuerResolution()
        #expect(machine.handle(.start([Self.first, Self.second])) == [.ask(Self.first)])
        #expect(machine.phase(of: 1) == .resolving && machine.phase(of: 2) == .pending)
        #expect(
            machine.handle(.answered(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1"))
                == [.record(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1")])
        #expect(machine.phase(of: 1) == .recording)
        #expect(machine.handle(.recorded(cardID: 1)) == [.ask(Self.second)])
        #expect(machine.phase(of: 1) == .resolved)
        #expect(
            machine.handle(.answered(cardID: 2, issuerID: "bank-b", issuerNodeID: ""))
                == [.record(cardID: 2, issuerID: "bank-b", issuerNodeID: "")])
        #expect(machine.handle(.recorded(cardID: 2)) == [.finish(resolved: 2, remaining: 0)])
    }

    @Test func aRefusedCardStaysHiddenAndCountsAsRemaining() {
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first, Self.second]))
        #expect(machine.handle(.refused(cardID: 1)) == [.ask(Self.second)])
        #expect(machine.phase(of: 1) == .unresolvable)
        // An answer that names no issuer resolves nothing either; that card is asked about again later.
        #expect(
            machine.handle(.answered(cardID: 2, issuerID: "", issuerNodeID: "issuer-1"))
                == [
                    .finish(resolved: 0, remaining: 2),
                    .recheckLater(restMilliseconds: 60_000, waitMilliseconds: 240_000, round: 1, cards: 1),
                ])
        #expect(machine.phase(of: 2) == .notFound)
        #expect(machine.handle(.recheckDue) == [.ask(Self.second)])
    }

    /// A card the TSP does not know is asked about again after 5 minutes, then 10, 20, …: the TSP may learn of it
    /// later. Rounds that resolve nothing give no `finish`, so they log nothing; a refused card is not asked again.
    @Test func aCardTheTSPDoesNotKnowIsAskedAboutAgainInLaterRounds() {
        let third = IssuerResolution.Card(cardID: 3, digitalCardID: "DC-3", walletAccountID: "wa-1")
        var machine = IssuerResolution()
        #expect(machine.handle(.start([Self.first, Self.second, third])) == [.ask(Self.first)])
        #expect(machine.handle(.notFound(cardID: 1)) == [.ask(Self.second)])
        #expect(machine.phase(of: 1) == .notFound)
        #expect(machine.handle(.notFound(cardID: 2)) == [.ask(third)])
        #expect(
            machine.handle(.refused(cardID: 3))
                == [
                    .finish(resolved: 0, remaining: 3),
                    .recheckLater(restMilliseconds: 60_000, waitMilliseconds: 240_000, round: 1, cards: 2),
                ])
        // Only the recheck's own event starts the round.
        #expect(machine.handle(.retryDue).isEmpty)
        #expect(machine.handle(.recheckDue) == [.ask(Self.first)])
        #expect(machine.round == 1 && machine.phase(of: 2) == .pending && machine.phase(of: 3) == .unresolvable)
        #expect(machine.handle(.recheckDue).isEmpty)
        #expect(machine.handle(.notFound(cardID: 1)) == [.ask(Self.second)])
        #expect(
            machine.handle(.notFound(cardID: 2))
                == [.recheckLater(restMilliseconds: 60_000, waitMilliseconds: 540_000, round: 2, cards: 2)])
        #expect(machine.handle(.recheckDue) == [.ask(Self.first)])
        #expect(
            machine.handle(.answered(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1"))
                == [.record(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1")])
        #expect(machine.handle(.recorded(cardID: 1)) == [.ask(Self.second)])
        // A round that resolved a card says so, and the card left is asked about again later.
        #expect(
            machine.handle(.notFound(cardID: 2))
                == [
                    .finish(resolved: 1, remaining: 2),
                    .recheckLater(restMilliseconds: 60_000, waitMilliseconds: 1_140_000, round: 3, cards: 1),
                ])
        #expect(machine.handle(.recheckDue) == [.ask(Self.second)])
        _ = machine.handle(.answered(cardID: 2, issuerID: "bank-b", issuerNodeID: "issuer-2"))
        // Nothing is left to ask about: the rechecks end.
        #expect(machine.handle(.recorded(cardID: 2)) == [.finish(resolved: 2, remaining: 1)])
        #expect(machine.handle(.recheckDue).isEmpty)
    }

    /// A card stored without an issuer after the start is asked about in the next round of rechecks, after the
    /// not-found cards; the cards the resolution knows keep their phases, and nothing joins outside a recheck's wait.
    @Test func aCardStoredAfterTheStartJoinsTheNextRecheck() {
        let third = IssuerResolution.Card(cardID: 3, digitalCardID: "DC-3", walletAccountID: "wa-1")
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first, Self.second]))
        #expect(machine.handle(.awaiting([Self.first, Self.second, third])).isEmpty)
        #expect(machine.phase(of: 3) == nil, "no recheck was waited for")
        _ = machine.handle(.notFound(cardID: 1))
        _ = machine.handle(.refused(cardID: 2))
        #expect(machine.handle(.awaiting([Self.first, Self.second, third])).isEmpty)
        #expect(machine.phase(of: 2) == .unresolvable && machine.phase(of: 3) == .pending)
        #expect(machine.handle(.recheckDue) == [.ask(Self.first)])
        #expect(machine.handle(.notFound(cardID: 1)) == [.ask(third)])
        #expect(
            machine.handle(.notFound(cardID: 3))
                == [.recheckLater(restMilliseconds: 60_000, waitMilliseconds: 540_000, round: 2, cards: 2)])
    }

    /// A card stored without an issuer once no round of rechecks is to come (every card resolved or refused)
    /// starts the rechecks: it is asked about after the first recheck's wait. Cards known already change nothing.
    @Test func aCardStoredWhenNothingIsLeftToRecheckStartsTheRechecks() {
        let third = IssuerResolution.Card(cardID: 3, digitalCardID: "DC-3", walletAccountID: "wa-1")
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first, Self.second]))
        _ = machine.handle(.refused(cardID: 1))
        _ = machine.handle(.answered(cardID: 2, issuerID: "bank-b", issuerNodeID: "issuer-2"))
        #expect(machine.handle(.recorded(cardID: 2)) == [.finish(resolved: 1, remaining: 1)])
        #expect(machine.handle(.awaiting([Self.first, Self.second])).isEmpty)
        #expect(
            machine.handle(.awaiting([Self.first, Self.second, third]))
                == [.recheckLater(restMilliseconds: 60_000, waitMilliseconds: 240_000, round: 1, cards: 1)])
        #expect(machine.phase(of: 3) == .notFound && machine.phase(of: 1) == .unresolvable)
        #expect(machine.handle(.recheckDue) == [.ask(third)])
        #expect(
            machine.handle(.answered(cardID: 3, issuerID: "bank-a", issuerNodeID: "issuer-1"))
                == [.record(cardID: 3, issuerID: "bank-a", issuerNodeID: "issuer-1")])
        #expect(machine.handle(.recorded(cardID: 3)) == [.finish(resolved: 2, remaining: 1)])
    }

    /// A TSP that cannot be reached during a round of rechecks is asked again after the short waits, and the round
    /// goes on.
    @Test func anUnreachableTSPDuringARecheckIsAskedAgainSoon() {
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first]))
        _ = machine.handle(.notFound(cardID: 1))
        #expect(machine.handle(.recheckDue) == [.ask(Self.first)])
        #expect(machine.handle(.unreachable(cardID: 1)) == [.wait(milliseconds: 1_000)])
        #expect(machine.handle(.recheckDue).isEmpty)
        #expect(machine.handle(.retryDue) == [.ask(Self.first)])
        #expect(machine.handle(.unreachable(cardID: 1)) == [.wait(milliseconds: 2_000)])
        #expect(machine.handle(.retryDue) == [.ask(Self.first)])
        #expect(
            machine.handle(.notFound(cardID: 1))
                == [.recheckLater(restMilliseconds: 60_000, waitMilliseconds: 540_000, round: 2, cards: 1)])
    }

    @Test func rechecksWaitFiveMinutesThenLongerUpToAnHour() {
        #expect(IssuerResolution.recheckWait(beforeRound: 1) == 300_000)
        #expect(IssuerResolution.recheckWait(beforeRound: 2) == 600_000)
        #expect(IssuerResolution.recheckWait(beforeRound: 4) == 2_400_000)
        #expect(IssuerResolution.recheckWait(beforeRound: 5) == 3_600_000)
        #expect(IssuerResolution.recheckWait(beforeRound: 1_000) == 3_600_000)
    }

    @Test func anUnreachableTSPIsAskedAgainAfterGrowingWaits() {
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first, Self.second]))
        #expect(machine.handle(.unreachable(cardID: 1)) == [.wait(milliseconds: 1_000)])
        #expect(machine.phase(of: 1) == .failedRetry(attempts: 1))
        #expect(machine.handle(.retryDue) == [.ask(Self.first)])
        #expect(machine.handle(.unreachable(cardID: 1)) == [.wait(milliseconds: 2_000)])
        #expect(machine.handle(.retryDue) == [.ask(Self.first)])
        #expect(machine.handle(.unreachable(cardID: 1)) == [.wait(milliseconds: 4_000)])
        #expect(machine.handle(.retryDue) == [.ask(Self.first)])
        _ = machine.handle(.answered(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1"))
        #expect(machine.handle(.recorded(cardID: 1)) == [.ask(Self.second)])
        // An answer resets the waits.
        #expect(machine.handle(.unreachable(cardID: 2)) == [.wait(milliseconds: 1_000)])
    }

    @Test func waitsStopGrowingAtAMinute() {
        #expect(IssuerResolution.wait(afterFailures: 6) == 32_000)
        #expect(IssuerResolution.wait(afterFailures: 7) == 60_000)
        #expect(IssuerResolution.wait(afterFailures: 1_000) == 60_000)
    }

    @Test func aCardTheStoreCouldNotRecordCountsAsRemaining() {
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first]))
        _ = machine.handle(.answered(cardID: 1, issuerID: "bank-a", issuerNodeID: "issuer-1"))
        #expect(machine.handle(.notRecorded(cardID: 1)) == [.finish(resolved: 0, remaining: 1)])
        #expect(machine.phase(of: 1) == .unresolvable)
    }

    @Test func eventsAboutCardsNotBeingAskedAreIgnored() {
        var machine = IssuerResolution()
        _ = machine.handle(.start([Self.first, Self.second]))
        #expect(machine.handle(.answered(cardID: 2, issuerID: "bank-b", issuerNodeID: "issuer-2")).isEmpty)
        #expect(machine.handle(.refused(cardID: 7)).isEmpty)
        #expect(machine.handle(.notFound(cardID: 2)).isEmpty)
        #expect(machine.handle(.retryDue).isEmpty)
        #expect(machine.handle(.recheckDue).isEmpty)
        // Recorded before the TSP answered is not a resolution.
        #expect(machine.handle(.recorded(cardID: 1)).isEmpty)
        #expect(machine.phase(of: 1) == .resolving)
        #expect(machine.handle(.start([Self.first])).isEmpty)
    }
}
