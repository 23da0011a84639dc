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
        // An answer that names no issuer resolves nothing either.
        #expect(
            machine.handle(.answered(cardID: 2, issuerID: "", issuerNodeID: "issuer-1"))
                == [.finish(resolved: 0, remaining: 2)])
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
        #expect(machine.handle(.retryDue).isEmpty)
        // Recorded before the TSP answered is not a resolution.
        #expect(machine.handle(.recorded(cardID: 1)).isEmpty)
        #expect(machine.phase(of: 1) == .resolving)
        #expect(machine.handle(.start([Self.first])).isEmpty)
    }
}
