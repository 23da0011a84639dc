import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetWallet

/// The check of the wallet's token states with the TSP's when the notification stream opens: a change whose
/// CARD_STATE message the broker dropped reaches the card, and nothing older than what the card holds does.
@Suite struct WalletTokenStateSyncTests {
    static let id = WalletLifecycleTests.id

    static func sync(_ wallet: WalletHarness, signal: StreamOpenedSignal = StreamOpenedSignal())
        -> WalletTokenStateSync
    {
        let keys = WalletLifecycleTests.paymentKeys(wallet)
        return WalletTokenStateSync(
            tsp: TspV1.TokenLifecycle.Client(wallet.tspAsWallet()), store: wallet.store, updates: keys.updates,
            signal: signal, logger: keys.logger)
    }

    /// The issuer resumed a token the wallet holds SUSPENDED, and the message saying so was dropped: the check
    /// makes the card ACTIVE at the TSP's version, and the issuer app's listeners hear it.
    @Test func aChangeWhoseMessageWasDroppedReachesTheCard() async throws {
        var (wallet, events) = try await WalletLifecycleTests.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(await events.next()?.tokenState == .suspended)
        // The issuer's resume, version 4, whose CARD_STATE never came; two tokens of the wallet's node the wallet
        // holds no card of are listed too, so the listing takes two pages.
        wallet.lifecycleTSP.state.withLock {
            $0.states[Self.id] = .active
            $0.versions[Self.id] = 4
            $0.states["DNITHE000000000000000009"] = .active
            $0.states["DNITHE000000000000000010"] = .suspended
            // A renewal's CARD_RENEWAL was dropped too: the card changes twice, and counts once.
            $0.panLast4[Self.id] = "0017"
        }
        let outcome = try await Self.sync(wallet).check()
        #expect(outcome.checked == 1 && outcome.changed == 1)
        #expect(wallet.logs.lines.contains { $0.contains("token states checked with the TSP cards=1 changed=1") })
        #expect(try wallet.store.card(ref: "card-1").panLast4 == "0017")
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .active && stored?.stateVersion == 4)
        let heard = await events.next()
        #expect(heard?.kind == .tokenStatusChanged && heard?.tokenState == .active)
        #expect(wallet.lifecycleTSP.recorded.stateQueries == 2)
        #expect(wallet.logs.lines.contains { $0.contains("token state brought in line with the TSP") })
    }

    /// A token the TSP lists in a state no token can be in is left as it is, and the check goes on: thrown, it ended
    /// the check at that token (the cards after it never checked), at every stream.
    @Test func aStateNoTokenCanBeInIsLeftOutAndTheCheckGoesOn() async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        wallet.lifecycleTSP.state.withLock {
            $0.states[Self.id] = .unrecognized(42)
            $0.versions[Self.id] = 9
        }
        let outcome = try await Self.sync(wallet).check()
        #expect(outcome.checked == 1 && outcome.changed == 0)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
        #expect(
            wallet.logs.lines.contains {
                $0.contains("the TSP listed a token state this wallet does not know; the card keeps its state")
            }, "\(wallet.logs.lines)")
    }

    /// A state the wallet already holds at a later version (a CARD_STATE that came after the TSP's listing was
    /// read: asked again, the TSP holds it too) is kept; so is a state the TSP lists at the card's own version.
    @Test func aStateNoNewerThanTheCardsChangesNothing() async throws {
        var (wallet, events) = try await WalletLifecycleTests.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(await events.next()?.tokenState == .suspended)
        for version: UInt64 in [2, 3] {
            wallet.lifecycleTSP.state.withLock {
                $0.states[Self.id] = .active
                $0.versions[Self.id] = version
                // The suspend reaches the TSP's state once the listing is read.
                $0.afterStateQuery = { state in
                    state.states[Self.id] = .suspended
                    state.versions[Self.id] = 3
                }
            }
            let outcome = try await Self.sync(wallet).check()
            #expect(outcome.checked == 1 && outcome.changed == 0)
            let stored = try wallet.store.card(ref: "card-1").result
            #expect(stored?.tokenState == .suspended && stored?.stateVersion == 3)
        }
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        #expect(await events.next()?.digitalCardID == "marker")
    }

    /// A renewal whose CARD_RENEWAL was dropped: the card shows the last four digits the TSP holds. Digits that are
    /// not four digits change nothing.
    @Test func aRenewalWhoseMessageWasDroppedShowsTheNewLastFour() async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        #expect(try wallet.store.card(ref: "card-1").panLast4 == "1111")
        for (given, shown) in [("12a4", "1111"), ("0017", "0017")] {
            wallet.lifecycleTSP.state.withLock {
                $0.states[Self.id] = .active
                $0.panLast4[Self.id] = given
            }
            let outcome = try await Self.sync(wallet).check()
            #expect(outcome.changed == (given == "0017" ? 1 : 0))
            #expect(try wallet.store.card(ref: "card-1").panLast4 == shown)
        }
        #expect(wallet.logs.lines.contains { $0.contains("card's last four digits brought in line with the TSP") })
    }

    /// A state an issuer app claimed (its in-app activation answer said SUSPENDED, at version 9 or at the card's own,
    /// while the TSP holds the token ACTIVE at 2) kept the card so through every check; asked again and still not
    /// the TSP's, the card takes the TSP's state and version.
    @Test(arguments: [UInt64(9), 0])
    func aStateClaimedAheadOfTheTSPTakesTheTSPsState(claimedVersion: UInt64) async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        let card = try wallet.store.card(ref: "card-1")
        // The TSP's version 2, then the claim: at version 9, or with none (the card keeps version 2).
        _ = try wallet.store.updateTokenState(id: card.id, state: .active, version: 2, nowMs: 1)
        _ = try wallet.store.updateTokenState(id: card.id, state: .suspended, version: claimedVersion, nowMs: 1)
        wallet.lifecycleTSP.state.withLock {
            $0.states[Self.id] = .active
            $0.versions[Self.id] = 2
        }
        let outcome = try await Self.sync(wallet).check()
        #expect(outcome.changed == 1)
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .active && stored?.stateVersion == 2)
        #expect(wallet.lifecycleTSP.recorded.stateQueries == 2)
        #expect(wallet.logs.lines.contains { $0.contains("card held a state the TSP never gave it") })
        // In line now: nothing more is asked or changed.
        #expect(try await Self.sync(wallet).check().changed == 0)
        #expect(wallet.lifecycleTSP.recorded.stateQueries == 3)
    }

    /// `tokenet wallet sync` (SyncWithTsp) runs the same check at once, after resuming unanswered digitizations.
    @Test func syncWithTspChecksNow() async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        wallet.lifecycleTSP.state.withLock {
            $0.states[Self.id] = .suspended
            $0.versions[Self.id] = 5
        }
        let answer = try await wallet.control.syncWithTsp(.init())
        #expect(answer == WalletV1.SyncWithTspResponse(digitizationsResumed: 0, cardsChecked: 1, cardsChanged: 1))
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .suspended)
        #expect(try await wallet.control.syncWithTsp(.init()).cardsChanged == 0)
    }

    /// A token the TSP deleted while the wallet was away is removed from the wallet's listeners' view.
    @Test func aTokenDeletedMeanwhileIsDeletedInTheWallet() async throws {
        var (wallet, events) = try await WalletLifecycleTests.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        wallet.lifecycleTSP.state.withLock {
            $0.states[Self.id] = .deactivated
            $0.versions[Self.id] = 3
        }
        try await Self.sync(wallet).check()
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .deactivated)
        #expect(await events.next()?.kind == .tokenizedCardRemoved)
    }

    /// Each opened stream leads to a check, run by the node's background task; a check the TSP refuses for now is
    /// tried again after a wait, and one it cannot answer at all (an older TSP) waits for the next stream.
    @Test func eachOpenedStreamLeadsToACheckUntilTheNodeStops() async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        let tsp = wallet.lifecycleTSP
        tsp.state.withLock {
            $0.states[Self.id] = .suspended
            $0.versions[Self.id] = 5
            $0.stateQueryFailure = RPCError(.unavailable, "the TSP is away")
        }
        let signal = StreamOpenedSignal()
        let waits = Mutex<[UInt64]>([])
        var sync = Self.sync(wallet, signal: signal)
        sync.sleep = { milliseconds in
            let count = waits.withLock {
                $0.append(milliseconds)
                return $0.count
            }
            // The TSP answers again during the second wait.
            if count == 2 { tsp.state.withLock { $0.stateQueryFailure = nil } }
        }
        let running = Task { [sync] in await sync.run() }
        signal.streamOpened()
        try await Self.eventually { try wallet.store.card(ref: "card-1").result?.stateVersion == 5 }
        #expect(waits.withLock { $0 } == [1_000, 5_000])
        #expect(tsp.recorded.stateQueries == 1)
        let retries = wallet.logs.lines.filter { $0.contains("token states could not be checked with the TSP") }
        #expect(retries.count == 1, "\(retries)")

        tsp.state.withLock { $0.stateQueryFailure = RPCError(.unimplemented, "no such method") }
        signal.streamOpened()
        try await Self.eventually {
            wallet.logs.lines.filter { $0.contains("token states could not be checked with the TSP") }.count == 2
        }
        #expect(waits.withLock { $0 }.count == 2, "a check the TSP cannot answer is not tried again")

        tsp.state.withLock { $0.stateQueryFailure = nil }
        signal.streamOpened()
        try await Self.eventually { tsp.recorded.stateQueries == 2 }
        running.cancel()
        await running.value
    }

    static func eventually(_ condition: () throws -> Bool) async throws {
        for _ in 0..<2_000 {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("the condition never held")
    }
}
