import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetWallet

/// A digitization the TSP never answered (it stopped while asking the issuer) and later ended once its step-up
/// window passed: the wallet knows the card by its Digitize request id alone, which the TSP's CARD_STATE names.
@Suite struct WalletUnansweredDigitizationTests {
    /// A wallet whose card-1 Digitize failed, so the card waits with its request id and no digital card id.
    static func unanswered() async throws -> WalletHarness {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.digitizeFailures = 1 }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        await #expect(throws: (any Error).self) { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        return wallet
    }

    /// Holds the fake TSP's Digitize until `open` yields; `entered` yields as one arrives.
    static func holdDigitize(_ wallet: WalletHarness) -> (
        entered: AsyncStream<Void>, open: AsyncStream<Void>.Continuation
    ) {
        let gate = FakeTSPGate()
        wallet.tsp.state.withLock { $0.digitizeHold = gate.hold }
        return (gate.entered, gate.open)
    }

    static func expired(requestID: String, id: String = "m-1") -> TspV1.Notification {
        WalletLifecycleTests.notification(
            "CARD_STATE",
            .cardState(
                .init(
                    tokenState: .deactivated, reasonCode: "DIGITIZATION_EXPIRED", initiator: "tsp",
                    digitizeRequestID: requestID)), id: id)
    }

    /// A Digitize whose answer was lost says what to do: the TSP may have made the token, and the same command
    /// finishes it. The connection error alone said nothing of it.
    @Test func aLostAnswerSaysToAcceptTheTermsAgain() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.digitizeFailures = 1 }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        await expectRPCError(
            .unavailable,
            "the TSP's Digitize failed: the issuer is restarting; the TSP may have begun the digitization: run "
                + "accept-terms card-1 again to finish it (it sends the same request, so no second token is made)"
        ) { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
    }

    /// A call that never left (no connection, or refused unprocessed by a goaway) began nothing at the TSP; one
    /// whose connection was lost may have.
    @Test func aCallThatNeverLeftIsToldApart() {
        let notConnected = RPCError(.unavailable, "cannot connect", cause: NotConnected(reason: "refused"))
        #expect(
            WalletControlService.neverSent(RPCError(.unavailable, "the TSP's Digitize failed", cause: notConnected)))
        #expect(WalletControlService.neverSent(RPCError(.unavailable, "goaway", cause: CallNotProcessed())))
        #expect(!WalletControlService.neverSent(RPCError(.unavailable, "connection lost", cause: ConnectionEnded())))
    }

    /// The card lists as DIGITIZING, not PENDING_TERMS: its terms were accepted, and the TSP may have its token.
    @Test func anUnansweredDigitizationListsAsDigitizing() async throws {
        let wallet = try await Self.unanswered()
        #expect(try await wallet.control.listCards(.init()).cards.map(\.status) == ["DIGITIZING"])
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(try await wallet.control.listCards(.init()).cards.map(\.status) == ["DIGITIZED"])
    }

    /// A digitization whose answer the wallet never got is sent again with its request id when the notification
    /// stream opens (a restart): the card gets its token and the issuer app hears of it, with no accept-terms from
    /// the person. Before, it showed DIGITIZING for good while the TSP held its token.
    @Test func anUnansweredDigitizationIsResumed() async throws {
        let wallet = try await Self.unanswered()
        var events = wallet.events.subscribe().events.makeAsyncIterator()
        let control = WalletControlService(
            tsp: wallet.tspAsWallet(), store: wallet.store, configuration: WalletConfiguration(),
            selection: try WalletSelection(store: wallet.store, configuredAccountID: "wallet-account-1"),
            logger: Logger(node: "wallet-node", sink: wallet.logs), events: wallet.events)
        #expect(await control.resumeUnansweredDigitizations() == 1)
        let requests = wallet.tsp.state.withLock { $0.digitizeRequests.map(\.requestID) }
        #expect(requests.count == 2 && requests[0] == requests[1], "\(requests)")
        #expect(try await wallet.control.listCards(.init()).cards.map(\.status) == ["DIGITIZED"])
        #expect(await events.next()?.kind == .tokenizedCardAdded)
        #expect(wallet.logs.lines.contains { $0.contains("unanswered digitization resumed") })
        // Nothing is left to resume.
        #expect(await control.resumeUnansweredDigitizations() == 0)
        #expect(wallet.tsp.state.withLock { $0.digitizeRequests.count } == 2)
    }

    /// The resume leaves a card whose Digitize an accept-terms is sending now to that command: it took the card for
    /// an unanswered one, sent its Digitize again and recorded the answer first, so the activation was logged
    /// without the command's trace id.
    @Test func aDigitizationInProgressIsLeftToItsCommand() async throws {
        let wallet = try WalletHarness()
        let (entered, open) = Self.holdDigitize(wallet)
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let logger = Logger(node: "wallet-node", level: .debug, sink: wallet.logs)
        let control = WalletControlService(
            tsp: wallet.tspAsWallet(), store: wallet.store, configuration: WalletConfiguration(),
            selection: try WalletSelection(store: wallet.store, configuredAccountID: "wallet-account-1"),
            logger: logger, events: wallet.events)
        let accepting = Task { try await control.acceptTerms(cardRef: "card-1", log: logger) }
        for await _ in entered { break }
        // The stream opened while the command's Digitize waits for its answer.
        #expect(await control.resumeUnansweredDigitizations() == 0)
        open.yield()
        #expect(try await accepting.value.card?.status == "DIGITIZED")
        #expect(wallet.tsp.state.withLock { $0.digitizeRequests.count } == 1)
        #expect(wallet.logs.lines.contains { $0.contains("digitization in progress; not resumed") })
    }

    /// A caller that goes while its accept-terms waits for the TSP (a killed CLI) leaves the digitization to finish:
    /// cancelled with the call, the Digitize the TSP had decided was cancelled too, and the card stayed DIGITIZING
    /// while the TSP held its token, until a sync.
    @Test func aCallerThatGoesLeavesTheDigitizationToFinish() async throws {
        let wallet = try WalletHarness()
        let (entered, open) = Self.holdDigitize(wallet)
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let accepting = Task { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        for await _ in entered { break }
        accepting.cancel()
        await #expect(throws: (any Error).self) { try await accepting.value }
        open.yield()
        var status = ""
        for _ in 0..<200 {
            status = try await wallet.control.listCards(.init()).cards.first?.status ?? ""
            if status == "DIGITIZED" { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(status == "DIGITIZED")
        #expect(wallet.tsp.state.withLock { $0.digitizeRequests.count } == 1)
    }

    /// A TSP that does not answer the first card's Digitize is not asked for the others in the same resume: each
    /// would wait for it as long, and a sync with six such cards took 27 s to fail. They wait for the next resume.
    @Test func aTSPThatDoesNotAnswerEndsTheResume() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.digitizeFailures = 2 }
        for card in ["card-1", "card-2"] {
            _ = try await wallet.control.addCard(WalletHarness.manual())
            await #expect(throws: (any Error).self) { try await wallet.control.acceptTerms(.init(cardRef: card)) }
        }
        wallet.tsp.state.withLock { $0.digitizeFailures = 5 }
        let control = WalletControlService(
            tsp: wallet.tspAsWallet(), store: wallet.store, configuration: WalletConfiguration(),
            selection: try WalletSelection(store: wallet.store, configuredAccountID: "wallet-account-1"),
            logger: Logger(node: "wallet-node", sink: wallet.logs), events: wallet.events)
        #expect(await control.resumeUnansweredDigitizations() == 0)
        #expect(wallet.tsp.state.withLock { $0.digitizeRequests.count } == 3)
        #expect(wallet.logs.lines.contains { $0.contains("the TSP did not answer") && $0.contains("left=1") })
        wallet.tsp.state.withLock { $0.digitizeFailures = 0 }
        #expect(await control.resumeUnansweredDigitizations() == 2)
    }

    /// SyncWithTsp says how many cards still wait for their Digitize's answer: a sync whose Digitize the TSP did not
    /// answer answered OK with the card still DIGITIZING, and nothing said.
    @Test func syncWithTspCountsTheDigitizationsLeftUnanswered() async throws {
        let (wallet, _) = try await WalletLifecycleTests.digitized()
        wallet.tsp.state.withLock { $0.digitizeFailures = 2 }
        for card in ["card-2", "card-3"] {
            _ = try await wallet.control.addCard(WalletHarness.manual())
            await #expect(throws: (any Error).self) { try await wallet.control.acceptTerms(.init(cardRef: card)) }
        }
        wallet.tsp.state.withLock { $0.digitizeFailures = 5 }
        let stuck = try await wallet.control.syncWithTsp(.init())
        #expect(stuck.digitizationsResumed == 0 && stuck.digitizationsUnanswered == 2, "\(stuck)")
        wallet.tsp.state.withLock { $0.digitizeFailures = 0 }
        let resumed = try await wallet.control.syncWithTsp(.init())
        #expect(resumed.digitizationsResumed == 2 && resumed.digitizationsUnanswered == 0, "\(resumed)")
    }

    /// A Digitize the TSP refuses for good (its receipt expired meanwhile: it made no token, or it would answer the
    /// request id with it) leaves the card declined, so it no longer waits as DIGITIZING and can be deleted; before,
    /// it stayed DIGITIZING, every resume and accept-terms met the same refusal, and delete asked for accept-terms.
    @Test func aDigitizationTheTSPRefusesForGoodIsRecordedDeclined() async throws {
        let wallet = try await Self.unanswered()
        wallet.tsp.state.withLock {
            $0.digitizeRefusal = RPCError(.failedPrecondition, "the eligibility receipt has expired")
        }
        await expectRPCError(.failedPrecondition, "card-1 is recorded as declined: add the card again") {
            try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        }
        let card = try await wallet.control.listCards(.init()).cards.first
        #expect(card?.status == "DECLINED", "\(String(describing: card))")
        #expect(
            try wallet.store.card(ref: "card-1").result?.declineReason.contains("the eligibility receipt has expired")
                == true)
        #expect(try await wallet.control.listCards(.init()).cards.count == 1)
        let removed = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(removed.removed)
    }

    /// A pushed card refused so cannot be added again from its receipt, which its eligibility check spent: the advice
    /// is to have the issuer push it again, as the wallet's own expiry check says. It said to add the card again.
    @Test func aPushedCardTheTSPRefusesForGoodSaysToHaveItPushedAgain() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock { $0.digitizeFailures = 1 }
        _ = try await wallet.control.addCard(
            .init(source: .pushReceipt(.init(scheme: .mastercard, payload: "rcpt-abc"))))
        await #expect(throws: (any Error).self) { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        wallet.tsp.state.withLock {
            $0.digitizeRefusal = RPCError(.failedPrecondition, "the eligibility receipt has expired")
        }
        await expectRPCError(
            .failedPrecondition,
            "card-1 is recorded as declined: have the issuer push the card again (a new push receipt), then add it "
                + "with that"
        ) { try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        #expect(try wallet.store.card(ref: "card-1").result?.declineReason.contains("add the card again") == false)
    }

    /// Commands that need the card's token named its status PENDING_TERMS, which ListCards shows as DIGITIZING,
    /// and did not say how to get the answer.
    @Test func commandsThatNeedTheTokenNameTheDigitizationAndTheWayOn() async throws {
        let wallet = try await Self.unanswered()
        let wanted =
            "card-1 has no digital card (status DIGITIZING); its digitization has no answer yet: accept its T&C "
            + "again (tokenet wallet accept-terms) to get it"
        await expectRPCError(.failedPrecondition, wanted) {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        }
        await expectRPCError(.failedPrecondition, wanted) {
            try await wallet.idv.selectIdvMethod(.init(cardRef: "card-1", methodID: "otp-sms"))
        }
        await expectRPCError(.failedPrecondition, wanted) {
            try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        }
        await expectRPCError(.failedPrecondition, wanted) {
            try await wallet.appToApp.openIssuerApp(.init(cardRef: "card-1"))
        }
    }

    @Test func anExpiredDigitizationEndsTheCardItWasAskedFor() async throws {
        let wallet = try await Self.unanswered()
        let requestID = try #require(try wallet.store.card(ref: "card-1").digitizeRequestID)
        try await wallet.notifications.handle(Self.expired(requestID: requestID))
        let card = try wallet.store.card(ref: "card-1")
        #expect(card.status == .declined)
        #expect(card.result?.decision == .declined && card.result?.tokenState == .deactivated)
        #expect(card.result?.declineReason.contains("add the card again") == true)
        let lines = wallet.logs.lines
        #expect(!lines.contains { $0.contains("unknown card") }, "\(lines)")
        #expect(lines.contains { $0.contains("card recorded as declined") && $0.contains("card-1") }, "\(lines)")
        // AcceptTerms again answers from the store: the TSP is not asked a second time.
        let again = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(again.decision == .declined)
        #expect(wallet.tsp.recorded.digitizeRequests.count == 1)
    }

    /// A card already answered keeps its answer; a request id the wallet never sent is an unknown card.
    @Test func anAnsweredOrUnknownDigitizationIsLeftAlone() async throws {
        let wallet = try await Self.unanswered()
        let card = try wallet.store.card(ref: "card-1")
        var answer = TspV1.DigitizeResponse()
        answer.decision = .declined
        answer.declineReason = "the TSP's own answer"
        _ = try wallet.store.finishDigitization(id: card.id, result: answer, nowMs: 1)
        try await wallet.notifications.handle(Self.expired(requestID: try #require(card.digitizeRequestID)))
        #expect(try wallet.store.card(ref: "card-1").result?.declineReason == "the TSP's own answer")
        try await wallet.notifications.handle(Self.expired(requestID: "never-sent", id: "m-2"))
        let lines = wallet.logs.lines
        #expect(lines.contains { $0.contains("whose answer the wallet already has") }, "\(lines)")
        #expect(lines.contains { $0.contains("card state for a card not recorded yet") }, "\(lines)")
    }

    /// A CARD_STATE that overtakes the Digitize answer it follows (the TSP replaced the token, made for a second
    /// digitization of the card at once) is kept and applied when the answer is recorded: acknowledged as for an
    /// unknown card, it was lost, and the token stayed INACTIVE in the wallet and the issuer app for good. An older
    /// state than the answer's is not.
    @Test func aStateThatOvertookTheAnswerIsAppliedWhenItIsRecorded() async throws {
        let wallet = try WalletHarness()
        wallet.tsp.state.withLock {
            $0.digitize.tokenState = .inactive
            $0.digitize.stateVersion = 1
        }
        let id = "DNITHE000000000000000001"
        var state = WalletLifecycleTests.cardState(.deactivated, version: 2)
        state.cardID = id
        try await wallet.notifications.handle(state)
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .deactivated)
        #expect(try wallet.store.card(ref: "card-1").result?.stateVersion == 2)

        // Kept once: an older state than a later answer's is dropped with it.
        var older = WalletLifecycleTests.cardState(.suspended, version: 1)
        older.cardID = "DNITHE000000000000000002"
        try await wallet.notifications.handle(older)
        wallet.tsp.state.withLock {
            $0.digitize.digitalCardID = "DNITHE000000000000000002"
            $0.digitize.tokenState = .active
            $0.digitize.stateVersion = 3
        }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
        #expect(try wallet.store.card(ref: "card-2").result?.tokenState == .active)
    }
}
