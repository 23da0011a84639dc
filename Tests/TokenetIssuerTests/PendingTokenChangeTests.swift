import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// A card blocked (or opened) whose tokens the TSP did not change, because it did not answer or the node stopped
/// first, keeps the change pending with the card, and the issuer's next check with the TSP makes it.
@Suite struct PendingTokenChangeTests {
    let tsp: FakeLifecycleTSP
    let sink = MemoryLogSink()
    let party: IssuerParty
    let care: IssuerV1.IssuerCardCare.Client
    let control: IssuerV1.IssuerControl.Client
    let card = Cards.visaApprove.0

    init() throws {
        (tsp, party, care) = try Support.cardCare(sink: sink)
        control = IssuerV1.IssuerControl.Client(Support.connect(Support.router(party), as: .operator))
    }

    func token(_ id: String, card: String = Cards.visaApprove.0) throws {
        try party.store.record(
            DecisionRecord(
                cardID: card, last4: "0009", digitalCardID: id, tokenLast4: "4321", walletAccountID: "wa-1",
                inputMethod: 1, deviceID: "d-1", deviceType: "PHONE", risk: RiskScores(account: 1, device: 1),
                recommendation: 1, rule: "approve", outcome: .approved),
            at: Support.now)
    }

    /// The check a node runs each time its stream to the TSP opens, registered as a node is by then.
    func check() async throws -> IssuerTokenSync.Summary {
        try await party.tsp.register()
        var sync = IssuerTokenSync(
            store: party.store, decisions: party.decisions, cardCare: party.cardCare, signal: StreamOpenedSignal(),
            logger: Support.logger(sink))
        sync.callWait = .seconds(600)
        return try await sync.check()
    }

    func pending() throws -> PendingTokenChange? { try party.store.card(id: card)?.pendingTokenChange }

    func sent() -> [(TspV1.LifecycleAction, [String], String)] {
        tsp.state.withLock { $0.changes.map { ($0.action, $0.digitalCardIds, $0.reasonCode) } }
    }

    @Test func aBlockWhoseTokensTheTSPDidNotChangeIsMadeAtTheNextCheck() async throws {
        try token("DNILIVE1")
        try token("DNIWAITING1")
        tsp.state.withLock {
            $0.inactive = ["DNIWAITING1"]
            $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting")
        }
        let error = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "STOLEN"))
        }
        #expect(error?.code == .unavailable)
        #expect(
            error?.message.hasPrefix(
                "card \(card) is blocked (STOLEN), and the change of its tokens (suspend) is pending: ") == true,
            "\(error?.message ?? "")")
        #expect(error?.message.contains("tokenet issuer sync") == true)
        // The block stands, with the change kept beside it, and the listing shows both.
        #expect(try party.store.card(id: card)?.blockedReason == "STOLEN")
        #expect(try pending()?.action == .suspend && pending()?.reasonCode == "STOLEN")
        let listed = try await control.listCards(.init()).cards.first { $0.cardID == card }
        #expect(listed?.blockedReason == "STOLEN")
        #expect(listed?.pendingTokenChange?.action == .suspend && listed?.pendingTokenChange?.reasonCode == "STOLEN")
        #expect(sent().isEmpty)

        let summary = try await check()
        #expect(summary.tokenChangesSettled == 1 && summary.tokenChangesPending == 0)
        let made = sent()
        #expect(made.map(\.0) == [.suspend, .delete], "\(made)")
        #expect(made.first?.1 == ["DNILIVE1", "DNIWAITING1"] && made.last?.1 == ["DNIWAITING1"])
        #expect(made.allSatisfy { $0.2 == "STOLEN" })
        #expect(try pending() == nil)
        #expect(try await control.listCards(.init()).cards.first { $0.cardID == card }?.pendingTokenChange == nil)

        // Settled, it is not made again.
        let again = try await check()
        #expect(again.tokenChangesSettled == 0 && again.tokenChangesPending == 0)
        #expect(sent().count == 2)
    }

    /// A call that failed after another was answered leaves its tokens with the call's status: the operator is
    /// answered, told the change is pending, and the next check sends every token of the card again.
    @Test func tokensLeftWithAFailureThatMayPassKeepTheChangePending() async throws {
        let ids = (1...11).map { "DNIMANY\($0)" }
        for id in ids { try token(id) }
        tsp.state.withLock { $0.failingChangeCalls[2] = RPCError(.deadlineExceeded, "no answer in time") }
        let blocked = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "LOST"))
        #expect(blocked.tokensPending)
        #expect(blocked.results.count == 11)
        #expect(blocked.results.last?.statusCode == StatusCode.deadlineExceeded.rawValue)
        #expect(try pending()?.action == .suspend)

        let summary = try await check()
        #expect(summary.tokenChangesSettled == 1)
        #expect(sent().map(\.1.count) == [10, 10, 1])
        #expect(try pending() == nil)
    }

    /// A refusal asking again would meet the same way (a token already suspended, one the TSP does not know)
    /// settles the change: only failures that may pass keep it.
    @Test func refusalsSettleTheChange() async throws {
        try token("DNIGONE1")
        try token("DNILIVE2")
        tsp.state.withLock { $0.foreign = ["DNIGONE1"] }
        let blocked = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "FRAUD"))
        let codes = Dictionary(uniqueKeysWithValues: blocked.results.map { ($0.digitalCardID, $0.statusCode) })
        #expect(codes == ["DNIGONE1": StatusCode.permissionDenied.rawValue, "DNILIVE2": 0])
        #expect(!blocked.tokensPending)
        #expect(try pending() == nil)
    }

    @Test func openingTheCardReplacesOrDropsThePendingChange() async throws {
        try token("DNILIVE3")
        tsp.state.withLock { $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting") }
        _ = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "STOLEN"))
        }
        #expect(try pending()?.action == .suspend)

        // Opened keeping its tokens as they are: the suspension not yet made is not made after all.
        let opened = try await care.setCardStatus(.init(cardID: card, blocked: false, tokens: .keep))
        #expect(!opened.blocked && !opened.tokensPending)
        #expect(try pending() == nil)
        let summary = try await check()
        #expect(summary.tokenChangesSettled == 0 && summary.tokenChangesPending == 0)
        #expect(sent().isEmpty)

        // Blocked again, and opened with a resume the TSP answers: the block's change is replaced, and settled.
        tsp.state.withLock { $0.failingChangeCalls[2] = RPCError(.unavailable, "the TSP is restarting") }
        _ = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "LOST", tokens: .delete))
        }
        #expect(try pending()?.action == .delete)
        let resumed = try await care.setCardStatus(.init(cardID: card, blocked: false, tokens: .resume))
        #expect(!resumed.tokensPending && resumed.results.map(\.tokenState) == [.active])
        #expect(try pending() == nil)
        #expect(sent().map(\.0) == [.resume])
    }

    /// A check that cannot make a pending change (the TSP still failing) keeps it, and says how many are left.
    @Test func aChangeTheTSPStillFailsStaysPending() async throws {
        try token("DNILIVE4")
        tsp.state.withLock {
            $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting")
            $0.failingChangeCalls[2] = RPCError(.unavailable, "the TSP is still restarting")
        }
        _ = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "STOLEN"))
        }
        let summary = try await check()
        #expect(summary.tokenChangesSettled == 0 && summary.tokenChangesPending == 1)
        #expect(try pending()?.action == .suspend)
        #expect(
            sink.lines.contains {
                $0.contains("pending change of a card's tokens could not be made; it stays pending")
                    && $0.contains("the TSP is still restarting")
            })
        let last = try await check()
        #expect(last.tokenChangesSettled == 1)
        #expect(try pending() == nil)
    }

    /// One change of a card's tokens at a time: the making again of a pending change waits for the operator's block
    /// or opening of the card under way (which makes or replaces it); an operator's block or opening while a
    /// pending change is being made is recorded at once, and its own change is made after that one, so an older
    /// change never reaches the TSP after a newer one.
    @Test func oneChangeOfACardsTokensAtATime() async throws {
        try token("DNILIVE5")
        tsp.state.withLock { $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting") }
        _ = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "STOLEN"))
        }
        #expect(party.cardCare.tokenChanges.begin(card))
        let held = try await check()
        #expect(held.tokenChangesSettled == 0 && held.tokenChangesPending == 1)
        #expect(tsp.state.withLock { $0.changeCalls } == 1)
        // Blocked again for fraud, deleting its tokens, while the suspension is being made: the block stands at once,
        // and its change waits, sent to the TSP by nobody until the one under way ends.
        let waiting = try await care.setCardStatus(
            .init(cardID: card, blocked: true, reasonCode: "FRAUD", tokens: .delete))
        #expect(waiting.blocked && waiting.changed && waiting.tokensPending && waiting.results.isEmpty)
        #expect(try party.store.card(id: card)?.blockedReason == "FRAUD")
        #expect(try pending()?.action == .delete)
        #expect(tsp.state.withLock { $0.changeCalls } == 1)
        party.cardCare.tokenChanges.end(card)

        let made = try await check()
        #expect(made.tokenChangesSettled == 1)
        #expect(sent().map(\.0) == [.delete] && sent().first?.2 == "FRAUD")
        #expect(try pending() == nil)
    }

    /// A change listed before another card's was made, and made or replaced meanwhile by a newer block or opening of
    /// its card, is read again before it is sent: the stale one is not, and would have undone the newer.
    @Test func aChangeReplacedWhileOthersAreMadeIsNotSent() async throws {
        let other = Cards.visaStandIn.0
        try token("DNIFIRST1")
        try token("DNIOTHER1", card: other)
        tsp.state.withLock {
            $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting")
            $0.failingChangeCalls[2] = RPCError(.unavailable, "the TSP is restarting")
        }
        for id in [card, other] {
            _ = await Support.rpcError {
                _ = try await care.setCardStatus(.init(cardID: id, blocked: true, reasonCode: "STOLEN"))
            }
        }
        #expect(try party.store.pendingTokenChanges().map(\.cardID) == [card, other])
        let gate = Gate()
        tsp.state.withLock { $0.holdNextChange = gate }
        let settling = Task { try await check() }
        try await gate.arrived(1)
        // While the first card's change is with the TSP: the other card is opened, its tokens kept as they are,
        // and the first card, whose change is under way, is opened too, its resume to follow.
        let opened = try await care.setCardStatus(.init(cardID: other, blocked: false, tokens: .keep))
        #expect(!opened.blocked && !opened.tokensPending)
        let reopened = try await care.setCardStatus(.init(cardID: card, blocked: false, tokens: .resume))
        #expect(!reopened.blocked && reopened.tokensPending)
        gate.open()
        let summary = try await settling.value
        #expect(summary.tokenChangesSettled == 1 && summary.tokenChangesPending == 0)
        #expect(sent().map(\.0) == [.suspend] && sent().first?.1 == ["DNIFIRST1"], "\(sent())")
        // The first card's resume, recorded while its suspension was under way, is made after it: the last to reach
        // the TSP is the newest.
        #expect(try party.store.pendingTokenChanges().map(\.cardID) == [card])
        _ = try await check()
        #expect(sent().map(\.0) == [.suspend, .resume], "\(sent())")
        #expect(try party.store.pendingTokenChanges().isEmpty)
    }

    /// A block the TSP did not answer is made again on the node's own schedule, with no stream opening and no
    /// operator: the TSP back, the next try settles it.
    @Test func aPendingChangeIsTriedAgainWithoutTheStreamOpening() async throws {
        try await party.tsp.register()
        try token("DNIRETRY1")
        tsp.state.withLock {
            $0.failingChangeCalls[1] = RPCError(.unavailable, "the TSP is restarting")
            $0.failingChangeCalls[2] = RPCError(.unavailable, "the TSP is still restarting")
        }
        let waits = Mutex<[UInt64]>([])
        let cardCare = party.cardCare
        let retrying = Task {
            await cardCare.retryPendingTokenChanges(sleep: { wait in waits.withLock { $0.append(wait) } })
        }
        defer { retrying.cancel() }
        _ = await Support.rpcError {
            _ = try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "STOLEN"))
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while try pending() != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(try pending() == nil)
        #expect(sent().map(\.0) == [.suspend])
        // The second call failed too: one wait, the first of the growing ones, before the third.
        #expect(waits.withLock { $0 } == [1_000])
        #expect(
            sink.lines.contains { $0.contains("changes of cards' tokens are still pending at the TSP; trying again") })
    }

    /// A block recorded while an operator's own opening or block of the card is with the TSP is made as soon as that
    /// call ends, not at the next of the retries' times.
    @Test func aChangeWaitingForAnOperatorsCallIsMadeWhenItEnds() async throws {
        try token("DNIWAIT1")
        let waits = Mutex<[UInt64]>([])
        let cardCare = party.cardCare
        let retrying = Task {
            await cardCare.retryPendingTokenChanges(sleep: { wait in waits.withLock { $0.append(wait) } })
        }
        defer { retrying.cancel() }
        let gate = Gate()
        tsp.state.withLock { $0.holdNextChange = gate }
        let first = Task { try await care.setCardStatus(.init(cardID: card, blocked: true, reasonCode: "LOST")) }
        try await gate.arrived(1)
        let second = try await care.setCardStatus(
            .init(cardID: card, blocked: true, reasonCode: "STOLEN", tokens: .delete))
        #expect(try second.tokensPending && pending()?.action == .delete)
        gate.open()
        #expect(try await first.value.results.map(\.tokenState) == [.suspended])
        let deadline = ContinuousClock.now + .seconds(120)
        while try pending() != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(try pending() == nil)
        #expect(sent().map(\.0) == [.suspend, .delete] && sent().last?.2 == "STOLEN", "\(sent())")
        // Made when the first call ended: no retry waited for.
        #expect(waits.withLock { $0 }.isEmpty)
    }
}
