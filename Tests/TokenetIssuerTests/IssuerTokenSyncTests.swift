import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

/// The issuer's check of its tokens with the TSP (`IssuerTokenSync`, `GetIssuerTokens`): what the broker's retention
/// dropped while the issuer node was away (a stand-in's advice, a token's delete) is learned when its stream opens.
@Suite struct IssuerTokenSyncTests {
    let tsp: FakeLifecycleTSP
    let sink = MemoryLogSink()
    let party: IssuerParty
    let care: IssuerV1.IssuerCardCare.Client

    init() throws {
        (tsp, party, care) = try Support.cardCare(sink: sink)
    }

    /// The check of an issuer registered with the TSP, as a node is once its start's registration succeeded.
    func sync(sleep: @escaping @Sendable (UInt64) async throws -> Void = { _ in }) async throws -> IssuerTokenSync {
        try await party.tsp.register()
        return unregisteredSync(sleep: sleep)
    }

    func unregisteredSync(sleep: @escaping @Sendable (UInt64) async throws -> Void = { _ in }) -> IssuerTokenSync {
        var sync = IssuerTokenSync(
            store: party.store, decisions: party.decisions, cardCare: party.cardCare, signal: StreamOpenedSignal(),
            logger: Support.logger(sink))
        sync.sleep = sleep
        // A test run keeps both CPUs busy: an in-memory call can wait its turn past the node's 30 s.
        sync.callWait = .seconds(600)
        return sync
    }

    /// The advice the TSP gives again for a stand-in token of `pan`.
    static func advice(pan: String = Cards.visaStandIn.1, expiry: String = Cards.visaStandIn.2) throws
        -> TspV1.StandInAdviceBody
    {
        var advice = TspV1.StandInAdviceBody()
        advice.decision = .approved
        advice.reason = "stand-in approved (the issuer could not be reached)"
        advice.encryptedCardData = try Support.encrypted(pan, expiry: expiry, to: try Support.issuerKey())
        advice.maskedPAN = String(repeating: "*", count: 12) + pan.suffix(4)
        advice.tokenLast4 = "4321"
        advice.walletAccountID = "wa-1"
        advice.device = CardV1.DeviceInfo(deviceID: "d-1")
        advice.decidedAtMs = 1_790_000_000_000
        return advice
    }

    func approve(_ digitalCardID: String, card: String = Cards.visaStandIn.0) throws {
        try party.store.record(
            DecisionRecord(
                cardID: card, last4: "0082", digitalCardID: digitalCardID, tokenLast4: "4321", walletAccountID: "wa-1",
                inputMethod: 1, deviceID: "d-1", deviceType: "PHONE", risk: RiskScores(account: 1, device: 1),
                recommendation: 1, rule: "approve", outcome: .approved),
            at: Support.now)
    }

    @Test func aStandInTokenAndADeleteTheIssuerMissedAreRecordedOnce() async throws {
        try approve("DNIDELETED1")
        try approve("DNIKEPT1")
        // Declined by the issuer, and the stand-in's decline it heard of: DEACTIVATED at the TSP, but never live.
        try party.store.record(
            DecisionRecord(
                cardID: Cards.visaStandIn.0, last4: "0082", digitalCardID: "DNIDECLINED1", tokenLast4: "4321",
                walletAccountID: "wa-1", inputMethod: 1, deviceID: "d-1", deviceType: "PHONE",
                risk: RiskScores(account: 5, device: 5), recommendation: 1, rule: "decline",
                outcome: .declined(reason: "fraud review")),
            at: Support.now)
        var declined = try Self.advice()
        declined.decision = .declined
        let plan = try #require(
            try party.decisions.standInAdvicePlan(
                declined, digitalCardID: "DNIDECLINED2", messageID: "m-1", log: Support.logger(sink)))
        try party.decisions.record(plan, decidedAtMs: 0, messageID: "m-1", log: Support.logger(sink))
        try party.store.recordUnknownTokens(["DNIKEPT1"])
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).unknown == ["DNIKEPT1"])
        tsp.state.withLock {
            $0.issuerTokens = [
                .init(digitalCardID: "DNIDELETED1", tokenState: .deactivated, stateVersion: 3),
                .init(digitalCardID: "DNIKEPT1", tokenState: .active, stateVersion: 2),
                .init(digitalCardID: "DNISTANDIN1", tokenState: .active, stateVersion: 2, decidedByStandIn: true),
                // Made and deleted while the issuer was away: nothing of it to keep.
                .init(digitalCardID: "DNIGONE1", tokenState: .deactivated, stateVersion: 3, decidedByStandIn: true),
                .init(digitalCardID: "DNISUSPENDED1", tokenState: .suspended, stateVersion: 3, decidedByStandIn: true),
                .init(digitalCardID: "DNIDECLINED1", tokenState: .deactivated, stateVersion: 2),
                .init(digitalCardID: "DNIDECLINED2", tokenState: .deactivated, stateVersion: 2, decidedByStandIn: true),
            ]
            $0.advices = ["DNISTANDIN1": try! Self.advice(), "DNISUSPENDED1": try! Self.advice()]
        }

        let first = try await sync().check()
        #expect(first == IssuerTokenSync.Summary(listed: 7, standIn: 2, deleted: 1))
        let tokens = try party.store.tokens(ofCard: Cards.visaStandIn.0)
        #expect(tokens.live == ["DNIKEPT1", "DNISTANDIN1", "DNISUSPENDED1"])
        #expect(tokens.deleted == ["DNIDELETED1"] && tokens.unknown.isEmpty)
        #expect(try party.store.goneTokens(["DNIGONE1", "DNIDECLINED1", "DNIDECLINED2"]).isEmpty)
        #expect(tsp.state.withLock { $0.namedAsks } == [["DNISTANDIN1", "DNISUSPENDED1"]])
        #expect(
            sink.lines.contains {
                $0.contains("recorded with its card") && $0.contains("DNISTANDIN1")
                    && $0.contains("via=GetIssuerTokens")
            })
        let deletedLine = sink.lines.first { $0.contains("tokens the TSP deleted recorded deleted") }
        #expect(deletedLine?.contains("tokens=DNIDELETED1") == true, "\(sink.lines)")
        #expect(deletedLine?.contains("DNIDECLINED") == false, "\(sink.lines)")
        #expect(!sink.lines.contains { $0.contains(Cards.visaStandIn.1) })

        // Checked again (the stream reopens): nothing more to ask for or record.
        let second = try await sync().check()
        #expect(second == IssuerTokenSync.Summary(listed: 7, standIn: 0, deleted: 0))
        #expect(tsp.state.withLock { $0.namedAsks.count } == 1)
        let rows = try party.store.database.query(
            "SELECT COUNT(*) FROM decisions WHERE digital_card_id = 'DNISTANDIN1'")
        #expect(try rows.first?.int64(0) == 1)

        // A lost-card suspension now reaches the stand-in tokens, and leaves the deleted one out.
        _ = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaStandIn.0))
        let changed = tsp.state.withLock { $0.changes.flatMap(\.digitalCardIds) }
        #expect(changed == ["DNIKEPT1", "DNISTANDIN1", "DNISUSPENDED1"])
    }

    /// The issuer approved, but its answer reached the TSP after the stand-in had declined, and the stand-in's advice
    /// was dropped: the listed DEACTIVATED token is the stand-in's decline, recorded as such, and no delete.
    @Test func aStandInDeclineThatBeatTheIssuersApprovalIsRecordedAndIsNoDelete() async throws {
        try approve("DNILATE1")
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNILATE1"])
        var declined = try Self.advice()
        declined.decision = .declined
        declined.reason = "stand-in declined (the issuer did not answer in time): above the stand-in approval limit"
        tsp.state.withLock {
            $0.issuerTokens = [
                .init(digitalCardID: "DNILATE1", tokenState: .deactivated, stateVersion: 2, decidedByStandIn: true)
            ]
            $0.advices = ["DNILATE1": declined]
        }
        #expect(try await sync().check() == IssuerTokenSync.Summary(listed: 1, standIn: 1, deleted: 0))
        let tokens = try party.store.tokens(ofCard: Cards.visaStandIn.0)
        #expect(tokens.live.isEmpty && tokens.deleted.isEmpty)
        #expect(try party.store.hasDecision(digitalCardID: "DNILATE1", rule: "stand-in"))
        #expect(!sink.lines.contains { $0.contains("tokens the TSP deleted recorded deleted") })
        #expect(sink.lines.contains { $0.contains("a digitization the issuer answered too late") })
    }

    /// A stand-in token made from the card's number before a renewal is moved onto the card as it is, as the advice
    /// message would have moved it.
    @Test func aStandInTokenOfTheCardsPreviousNumberIsMovedOntoTheRenewedCard() async throws {
        _ = try await care.renewCard(.init(cardID: Cards.visaStandIn.0, pan: "4761000010000090"))
        tsp.state.withLock {
            $0.issuerTokens = [
                .init(digitalCardID: "DNIOLDNUMBER1", tokenState: .active, stateVersion: 2, decidedByStandIn: true)
            ]
            $0.advices = ["DNIOLDNUMBER1": try! Self.advice()]
        }
        #expect(try await sync().check().standIn == 1)
        let moved = tsp.state.withLock { $0.renewals.map { ($0.0.digitalCardIds, $0.1.accountNumber) } }
        #expect(moved.count == 1 && moved.first?.0 == ["DNIOLDNUMBER1"] && moved.first?.1 == "4761000010000090")
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNIOLDNUMBER1"])
    }

    /// Before this run's registration succeeded the check is refused, saying why: the TSP would answer for the issuers
    /// the node registered in an earlier run, perhaps with another fixture and key.
    @Test func aCheckBeforeTheIssuerRegisteredSaysWhy() async throws {
        var error = await refusal { try await unregisteredSync().check() }
        #expect(error?.code == .failedPrecondition, "\(String(describing: error))")
        #expect(
            error?.message.contains("registration with the TSP has not completed yet (it registers at start)") == true)
        #expect(tsp.state.withLock { $0.listingCalls } == 0)
        let refusing = FakeTSP(key: try Support.tspKey())
        refusing.state.withLock {
            $0.registrationRefusal = RPCError(
                .permissionDenied, "issuer \"tokenet-bank\" is registered by another node")
        }
        // A loaded machine must not turn the refusal into a timeout.
        let link = TSPLink(caller: Support.connect(refusing.router, as: .issuer), attemptTimeout: nil) {
            () throws(IssuerError) in TspV1.RegisterIssuerRequest(issuerID: "tokenet-bank")
        }
        _ = try? await link.register()
        error = await refusal { try link.requireRegistered() }
        #expect(error?.code == .failedPrecondition, "\(String(describing: error))")
        #expect(
            error?.message.contains(
                "registration with the TSP failed (PERMISSION_DENIED: issuer \"tokenet-bank\" is registered by another "
                    + "node)")
                == true, "\(String(describing: error))")
    }

    func refusal(_ body: () async throws -> Void) async -> RPCError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? RPCError
        }
    }

    /// The advice as a message and the check can read the same token at once: it is recorded once.
    @Test func anAdviceRecordedMeanwhileIsNotRecordedAgain() async throws {
        let plan = try #require(
            try party.decisions.standInAdvicePlan(
                try Self.advice(), digitalCardID: "DNISTANDIN2", messageID: "m-1", log: Support.logger(sink)))
        let again = plan
        #expect(try party.decisions.record(plan, decidedAtMs: 0, messageID: "m-1", log: Support.logger(sink)))
        #expect(try !party.decisions.record(again, decidedAtMs: 0, messageID: "sync", log: Support.logger(sink)))
        #expect(try party.store.tokens(ofCard: Cards.visaStandIn.0).live == ["DNISTANDIN2"])
        let rows = try party.store.database.query(
            "SELECT COUNT(*) FROM decisions WHERE digital_card_id = 'DNISTANDIN2'")
        #expect(try rows.first?.int64(0) == 1)
    }

    /// A check that fails (the TSP out of reach, or the issuer not registered yet) is tried again after growing
    /// waits; a TSP without the call is not asked again until the stream reopens.
    @Test func aFailedCheckIsTriedAgainAndAnOlderTSPIsLeftAlone() async throws {
        try approve("DNIDELETED2")
        tsp.state.withLock {
            $0.issuerTokens = [.init(digitalCardID: "DNIDELETED2", tokenState: .deactivated, stateVersion: 3)]
            $0.listingFailures = [
                RPCError(.unavailable, "the TSP is out of reach"),
                RPCError(.failedPrecondition, "this node has not registered an issuer; call RegisterIssuer first"),
            ]
        }
        let waits = Mutex<[UInt64]>([])
        let sync = try await sync { wait in waits.withLock { $0.append(wait) } }
        let task = Task { await sync.run() }
        sync.signal.streamOpened()
        try await waitUntil { try party.store.tokens(ofCard: Cards.visaStandIn.0).deleted == ["DNIDELETED2"] }
        #expect(waits.withLock { $0 } == [1_000, 5_000])
        #expect(sink.lines.filter { $0.contains("could not be checked with the TSP; trying again") }.count == 1)

        tsp.state.withLock { $0.listingFailures = [RPCError(.unimplemented, "no such method")] }
        let calls = tsp.state.withLock { $0.listingCalls }
        sync.signal.streamOpened()
        try await waitUntil { tsp.state.withLock { $0.listingCalls } == calls + 1 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(tsp.state.withLock { $0.listingCalls } == calls + 1)
        #expect(waits.withLock { $0 } == [1_000, 5_000])
        task.cancel()
    }

    func waitUntil(_ condition: () throws -> Bool) async throws {
        // Up to a minute: on a loaded machine an in-memory call can take seconds.
        for _ in 0..<3000 {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("condition never held")
    }
}
