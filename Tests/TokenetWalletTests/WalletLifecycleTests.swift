import Foundation
import Synchronization
import Testing
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetWallet

/// The wallet's side of the lifecycle and of the broker's messages: state changes it starts or hears, the events
/// the issuer app's listeners get, transactions, messages and payment keys.
@Suite struct WalletLifecycleTests {
    static let id = "DNITHE000000000000000001"

    /// A wallet with card-1 digitized ACTIVE, and a listener opened before anything else happens.
    static func digitized(configuration: WalletConfiguration = WalletConfiguration()) async throws
        -> (WalletHarness, AsyncStream<WalletV1.WalletEvent>.Iterator)
    {
        let wallet = try WalletHarness(configuration: configuration)
        let events = wallet.events.subscribe().events.makeAsyncIterator()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        return (wallet, events)
    }

    static func notification(
        _ type: String, _ body: TspV1.Notification.Body, sender: String = "CPS", id: String = UUID().uuidString,
        lastCall: UInt64 = 0
    ) -> TspV1.Notification {
        var message = TspV1.Notification(
            messageID: id, sender: sender, topic: "D1_NOTIFICATION", messageType: type, cardID: Self.id,
            lastCallTimestampMs: lastCall)
        message.body = body
        return message
    }

    static func cardState(_ state: CardV1.TokenState, version: UInt64 = 0, id: String = UUID().uuidString)
        -> TspV1.Notification
    {
        notification(
            "CARD_STATE",
            .cardState(.init(tokenState: state, reasonCode: "LOST_CARD", initiator: "issuer", stateVersion: version)),
            id: id)
    }

    @Test func walletSuspendsResumesAndDeletesThroughTheTSPAndListenersHearIt() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        let suspended = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(suspended.card?.state == .suspended)
        #expect(await events.next()?.kind == .tokenStatusChanged)
        let resumed = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .resume, reasonCode: "USER_REQUEST"))
        #expect(resumed.card?.state == .active)
        let resumedEvent = await events.next()
        #expect(resumedEvent?.kind == .tokenStatusChanged)
        #expect(resumedEvent?.tokenState == .active)
        #expect(resumedEvent?.digitalCardID == Self.id)
        #expect(try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")).keysRemaining > 0)
        let deleted = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(deleted.card?.state == .deactivated && !deleted.removed)
        #expect(await events.next()?.kind == .tokenizedCardRemoved)
        // The deleted token's payment keys went with it.
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).keysRemaining == 0)
        #expect(
            wallet.lifecycleTSP.recorded.changes
                == [
                    .init(digitalCardID: Self.id, action: .suspend, reasonCode: "USER_REQUEST"),
                    .init(digitalCardID: Self.id, action: .resume, reasonCode: "USER_REQUEST"),
                    .init(digitalCardID: Self.id, action: .delete, reasonCode: "USER_REQUEST"),
                ])
    }

    /// The TSP's CARD_STATE about the wallet's own change can arrive before the TSP's answer: the card changes once,
    /// and the issuer app's listeners hear it once, not again when the answer comes.
    @Test func aChangeWhoseCardStateArrivesBeforeTheAnswerIsAnnouncedOnce() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        let handler = wallet.notifications
        wallet.lifecycleTSP.state.withLock {
            $0.whileChanging = { _, state in try await handler.handle(Self.cardState(state)) }
        }
        let suspended = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(suspended.card?.state == .suspended)
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        let changed = await events.next()
        #expect(changed?.kind == .tokenStatusChanged && changed?.tokenState == .suspended)
        let next = await events.next()
        #expect(next?.digitalCardID == "marker", "announced twice: \(String(describing: next))")
    }

    /// The TSP's answer to the wallet's suspend can arrive after the CARD_STATE of a later change, such as the
    /// issuer resuming the token meanwhile: the wallet keeps the later state, as the TSP holds it, not the answer's.
    @Test func anAnswerOlderThanAStateAlreadyHeardChangesNothing() async throws {
        let (wallet, _) = try await Self.digitized()
        let handler = wallet.notifications
        wallet.lifecycleTSP.state.withLock {
            // The suspend is the token's version 3; the issuer's resume after it, version 4, is heard first.
            $0.whileChanging = { _, _ in try await handler.handle(Self.cardState(.active, version: 4)) }
        }
        let answer = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(answer.card?.state == .active)
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .active && stored?.stateVersion == 4)
    }

    /// A state the TSP sets is logged with what it is and who set it, and a payment with the token then refused
    /// says how it may be resumed: the type and the token id alone sent a person to the TSP's history.
    @Test func aStateFromTheTSPIsLoggedWithItsInitiatorAndPayingSaysHowToResume() async throws {
        let (wallet, _) = try await Self.digitized()
        try await wallet.notifications.handle(Self.cardState(.suspended, version: 5))
        let line = wallet.logs.lines.first { $0.contains("token state updated from the TSP") }
        #expect(
            line?.contains("state=TOKEN_STATE_SUSPENDED") == true && line?.contains("reason=LOST_CARD") == true
                && line?.contains("initiator=issuer") == true,
            "\(wallet.logs.lines)")
        await expectRPCError(
            .failedPrecondition,
            "card-1 is SUSPENDED; only an ACTIVE card can pay (resume it with tokenet wallet resume; a token the "
                + "issuer or the TSP suspended only they resume, and tokenet wallet inbox shows who did)"
        ) { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
    }

    /// A CARD_STATE delivered again after a later change (the broker redelivers what it did not see acknowledged)
    /// does not bring the earlier state back.
    @Test func aCardStateOlderThanTheStoredStateChangesNothing() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        #expect(await events.next()?.tokenState == .suspended)
        try await wallet.notifications.handle(Self.cardState(.active, version: 2))
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .suspended && stored?.stateVersion == 3)
        // Said as it is: the log read "token state updated from the TSP".
        #expect(
            wallet.logs.lines.contains { $0.contains("token state not changed: the message is older than the state") },
            "\(wallet.logs.lines)")
        #expect(!wallet.logs.lines.contains { $0.contains("token state updated from the TSP") })
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        #expect(await events.next()?.digitalCardID == "marker")
    }

    /// A CARD_STATE whose state is no state a token can be in (UNSPECIFIED, or a number from a newer protocol)
    /// changes nothing and says why: it replaced the card's state, which showed as "?".
    @Test(arguments: [CardV1.TokenState.unspecified, .unrecognized(42)])
    func aCardStateWithAStateNoTokenCanBeInChangesNothing(_ state: CardV1.TokenState) async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        try await wallet.notifications.handle(Self.cardState(state, version: 7))
        let stored = try wallet.store.card(ref: "card-1").result
        #expect(stored?.tokenState == .active)
        #expect(
            wallet.logs.lines.contains {
                $0.contains("notification could not be processed")
                    && $0.contains("which is not a state this wallet knows; the card keeps TOKEN_STATE_ACTIVE")
            }, "\(wallet.logs.lines)")
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        #expect(await events.next()?.digitalCardID == "marker")
    }

    /// Nor does one that arrives before the card's Digitize answer, kept until the answer is recorded: the card took
    /// it then, and showed state "?".
    @Test func anEarlyCardStateWithAStateNoTokenCanBeInIsNotKept() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        try await wallet.notifications.handle(Self.cardState(.unrecognized(42), version: 7))
        #expect(
            wallet.logs.lines.contains { $0.contains("which is not a state this wallet knows") }, "\(wallet.logs.lines)"
        )
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
    }

    /// A deleted token is deleted for good (the TSP refuses any change of a DEACTIVATED token): a state heard after
    /// the delete, without a version (an operator's message, an issuer app that passes none) or with any version,
    /// is stale and must not bring the card back, nor tell the issuer app's listeners it is live again.
    @Test(arguments: [UInt64(0), 9])
    func aDeletedCardStaysDeleted(_ version: UInt64) async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        _ = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(await events.next()?.kind == .tokenizedCardRemoved)
        try await wallet.notifications.handle(Self.cardState(.active, version: version))
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .deactivated)
        _ = wallet.events.publish(WalletEventHubTests.event("marker"))
        #expect(await events.next()?.digitalCardID == "marker")
    }

    /// A change whose deadline passed may have been made at the TSP all the same: the message says so, where a bare
    /// DEADLINE_EXCEEDED read as a change that did not happen.
    @Test func aChangePastItsDeadlineSaysTheTSPMayHaveMadeIt() async throws {
        let (wallet, _) = try await Self.digitized()
        wallet.lifecycleTSP.state.withLock { $0.refusal = RPCError(.deadlineExceeded, "the deadline passed") }
        await expectRPCError(
            .deadlineExceeded,
            "the TSP's ChangeTokenState failed: the deadline passed; the TSP may have made the change all the same"
        ) {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        }
    }

    @Test func theTSPsRefusalPassesThroughAndChangesNothing() async throws {
        let (wallet, _) = try await Self.digitized()
        wallet.lifecycleTSP.state.withLock {
            $0.refusal = RPCError(.failedPrecondition, "cannot resume a token that is ACTIVE")
        }
        do {
            _ = try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .resume, reasonCode: "USER_REQUEST"))
            Issue.record("the TSP's refusal should pass through")
        } catch let error as RPCError {
            #expect(error.code == .failedPrecondition)
            #expect(error.message == "the TSP's ChangeTokenState failed: cannot resume a token that is ACTIVE")
        }
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
        #expect(
            await statusCode {
                try await wallet.lifecycle.changeCardState(.init(cardRef: "card-7", action: .suspend))
            } == .notFound)
    }

    /// A card that never got a token, its T&C not accepted (PENDING_TERMS) or its digitization declined, can be
    /// deleted all the same: the wallet removes it itself and says so, and asks the TSP nothing, since the TSP holds
    /// no token of it. Suspending or resuming it stays refused, and so does using its reference once it is gone.
    @Test(arguments: [WalletCardStatus.pendingTerms, .declined])
    func aCardWithoutATokenIsRemovedWithoutTheTSP(_ status: WalletCardStatus) async throws {
        let wallet = try WalletHarness()
        wallet.tsp.configure {
            $0.digitize = TspV1.DigitizeResponse(decision: .declined, declineReason: "issuer said no")
        }
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.addCard(WalletHarness.manual("4111111111111129"))
        if status == .declined { _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1")) }
        #expect(try wallet.store.card(ref: "card-1").status == status)
        // A card whose T&C wait says what to do first.
        let next = status == .pendingTerms ? "; accept its T&C first (tokenet wallet accept-terms)" : ""
        await expectRPCError(.failedPrecondition, "card-1 has no digital card (status \(status.rawValue))\(next)") {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .suspend, reasonCode: "USER_REQUEST"))
        }

        let deleted = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(deleted.removed)
        #expect(deleted.card?.cardRef == "card-1" && deleted.card?.status == status.rawValue)
        #expect(deleted.card?.digitalCardID == "")
        #expect(try await wallet.control.listCards(.init()).cards.map(\.cardRef) == ["card-2"])
        #expect(wallet.lifecycleTSP.recorded.changes.isEmpty)
        #expect(wallet.logs.lines.contains { $0.contains("card without a token removed") && $0.contains("card-1") })
        await expectRPCError(.notFound, "the wallet has no card card-1") {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        }
        // The reference is not given again: the next card is card-3.
        #expect(try await wallet.control.addCard(WalletHarness.manual()).cardRef == "card-3")
    }

    /// A card whose token has ended (deleted) is removed from the wallet by a second delete, with its payment keys
    /// and its place as the selected card, and the TSP is not asked again. Before, the TSP refused ("cannot delete a
    /// token that is DEACTIVATED") and the card stayed listed for good.
    @Test func aCardWhoseTokenEndedIsRemovedByASecondDelete() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()  // TOKENIZED_CARD_ADDED
        _ = try await wallet.selection.selectCard(.init(cardRef: "card-1"))
        #expect(try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")).keysRemaining > 0)
        let deleted = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(deleted.card?.state == .deactivated && !deleted.removed)
        let removed = try await wallet.lifecycle.changeCardState(
            .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        #expect(removed.removed && removed.card?.state == .deactivated && removed.card?.digitalCardID == Self.id)
        #expect(try await wallet.control.listCards(.init()).cards.isEmpty)
        #expect(wallet.lifecycleTSP.recorded.changes.count == 1)
        #expect(try wallet.store.selection().selectedCardID == nil)
        await expectRPCError(.notFound, "the wallet has no card card-1") {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        }
    }

    /// A suspend or resume of a card whose token the wallet knows has ended is refused by the wallet, as delete
    /// removes such a card without the TSP: the TSP was asked, and its refusal read as a failed TSP call.
    @Test(arguments: [TspV1.LifecycleAction.suspend, .resume])
    func aCardWhoseTokenEndedIsNotSuspendedOrResumedAtTheTSP(_ action: TspV1.LifecycleAction) async throws {
        let (wallet, _) = try await Self.digitized()
        try await wallet.notifications.handle(Self.cardState(.deactivated))
        let verb = action == .suspend ? "suspend" : "resume"
        await expectRPCError(
            .failedPrecondition,
            "cannot \(verb) card-1: its token \(Self.id) had already ended (DEACTIVATED), so the TSP was not asked"
        ) {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: action, reasonCode: "USER_REQUEST"))
        }
        #expect(wallet.lifecycleTSP.recorded.changes.isEmpty)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .deactivated)
    }

    /// A card whose Digitize was sent and never answered may have a token at the TSP that the wallet does not know
    /// of yet: removing the card would leave that token behind, so the delete is refused and says what to do.
    @Test func aCardWhoseDigitizationIsUnansweredIsNotRemoved() async throws {
        let wallet = try await WalletUnansweredDigitizationTests.unanswered()
        await expectRPCError(.failedPrecondition, "accept its T&C again (tokenet wallet accept-terms)") {
            try await wallet.lifecycle.changeCardState(
                .init(cardRef: "card-1", action: .delete, reasonCode: "USER_REQUEST"))
        }
        #expect(try wallet.store.card(ref: "card-1").status == .pendingTerms)
        #expect(wallet.lifecycleTSP.recorded.changes.isEmpty)
    }

    @Test func cardStateFromTheIssuerUpdatesTheWalletAndItsListenersOnce() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()
        let message = Self.cardState(.suspended, id: "m-1")
        try await wallet.notifications.handle(message)
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .suspended)
        let event = await events.next()
        #expect(event?.kind == .tokenStatusChanged)
        #expect(event?.tokenState == .suspended)
        try await wallet.notifications.handle(message)  // redelivered: kept once, not applied again
        try await wallet.notifications.handle(Self.cardState(.deactivated))
        #expect(await events.next()?.kind == .tokenizedCardRemoved)
        #expect(try wallet.store.inbox().count == 2)
    }

    @Test func transactionsAndMessagesAreKept() async throws {
        let (wallet, _) = try await Self.digitized()
        let body = TspV1.TransactionBody(
            transactionID: "txn-1", amountMinor: 1250, currency: "USD", merchant: "Coffee", approved: true,
            transactionAtMs: 42)
        try await wallet.notifications.handle(
            Self.notification("TRANSACTION_NOTIFICATION", .transaction(body), sender: "TNS", lastCall: 42))
        try await wallet.notifications.handle(
            Self.notification("MESSAGING", .messaging(.init(title: "Hi", body: "Offer", action: "OPEN"))))
        let listed = try await wallet.lifecycle.listTransactions(.init(cardRef: "card-1"))
        #expect(
            listed.transactions
                == [
                    .init(
                        transactionID: "txn-1", digitalCardID: Self.id, amountMinor: 1250, currency: "USD",
                        merchant: "Coffee", approved: true, transactionAtMs: 42, lastCallTimestampMs: 42)
                ])
        let inbox = try await wallet.lifecycle.inbox(.init()).notifications
        #expect(inbox.map(\.messageType) == ["TRANSACTION_NOTIFICATION", "MESSAGING"])
        #expect(inbox.last?.body == .messaging(.init(title: "Hi", body: "Offer", action: "OPEN")))
    }

    /// A card its issuer renewed keeps its token; the wallet shows the new card's last four digits, to its user and
    /// to the issuer app, once however often the message comes.
    @Test func aRenewedCardShowsItsNewLastFourDigits() async throws {
        let (wallet, _) = try await Self.digitized()
        let before = try wallet.store.card(ref: "card-1")
        #expect(before.panLast4 != "1129")
        let renewal = Self.notification(
            "CARD_RENEWAL",
            .cardRenewal(.init(previousCardID: "c-1", newCardID: "c-2", panLast4: "1129", expiry: "08/31")), id: "r-1")
        try await wallet.notifications.handle(renewal)
        let card = try wallet.store.card(ref: "card-1")
        #expect(card.panLast4 == "1129")
        #expect(card.result?.panLast4 == "1129")
        #expect(card.result?.tokenState == .active)
        #expect(try await wallet.control.listCards(.init()).cards.map(\.panLast4) == ["1129"])
        #expect(try await wallet.issuerApp.currentTokens(.init()).tokens.map(\.panLast4) == ["1129"])
        #expect(wallet.logs.lines.contains { $0.contains("card renewed by its issuer") })

        try await wallet.notifications.handle(renewal)  // redelivered: kept once
        // Not four digits: the card keeps what it shows.
        try await wallet.notifications.handle(
            Self.notification("CARD_RENEWAL", .cardRenewal(.init(panLast4: "12x9", expiry: "08/31"))))
        #expect(try wallet.store.card(ref: "card-1").panLast4 == "1129")
        #expect(
            wallet.logs.lines.contains { $0.contains("card renewal without the last four digits of a card number") })
        #expect(try wallet.store.inbox().count == 2)
    }

    @Test func otherSendersAreKeptButDoNotAct() async throws {
        let (wallet, _) = try await Self.digitized()
        try await wallet.notifications.handle(
            Self.notification(
                "CARD_STATE", .cardState(.init(tokenState: .suspended)), sender: "tokenet-bank"))
        #expect(try wallet.store.card(ref: "card-1").result?.tokenState == .active)
        #expect(try wallet.store.inbox().count == 1)
    }

    @Test func paymentKeysAreToppedUpBelowTheThresholdAndByAnMGPush() async throws {
        let (wallet, _) = try await Self.digitized()
        var keys = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        #expect(keys.replenished)
        #expect(keys.keysRemaining == 9)
        #expect(keys.batches == 1)
        for _ in 0..<5 { keys = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        #expect(keys.keysRemaining == 4)
        #expect(!keys.replenished)
        keys = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        #expect(keys.replenished)
        #expect(keys.keysRemaining == 13)
        #expect(wallet.lifecycleTSP.recorded.replenishments.map(\.keysRemaining) == [0, 3])

        try await wallet.notifications.handle(Self.notification("REPLENISHMENT", .replenishment(.init()), sender: "MG"))
        let after = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(after.keysRemaining == 23)
        #expect(after.batches == 3)
    }

    /// Payments at once on one card each found it at or below the threshold and each asked the TSP for a batch (25
    /// payments: 20 batches). One request per card is on its way at a time, and a payment whose turn comes after a
    /// batch arrived asks for none: six payments from four keys fetch one batch, however they interleave. (The TSP
    /// answers at once. Under a full parallel run on two CPUs every test's tasks wait their turn on the two threads
    /// of the pool, and this test once ran past a one-minute limit without any of its own work going wrong: its
    /// limit is three minutes, as most tests' are.)
    @Test(.timeLimit(.minutes(3))) func paymentsAtOnceOnOneCardFetchOneBatch() async throws {
        let (wallet, _) = try await Self.digitized()
        for _ in 0..<6 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).keysRemaining == 4)
        let tsp = wallet.lifecycleTSP
        let requestsBefore = tsp.recorded.replenishments.count
        let lifecycle = wallet.lifecycle
        let answers = try await withThrowingTaskGroup(of: WalletV1.PaymentKeysResponse.self) { group in
            for _ in 0..<6 {
                group.addTask { try await lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 6)
        #expect(tsp.recorded.replenishments.count == requestsBefore + 1, "\(tsp.recorded.replenishments)")
        // Only the payment whose request fetched the batch says so.
        #expect(answers.filter(\.replenished).count == 1, "\(answers.map(\.replenished))")
        let after = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(after.keysRemaining + 2 == FakeTSPLifecycle.keysPerBatch && after.batches == 2)
    }

    /// A payment cancelled while it waits for another's key request leaves the queue; the rest go on.
    @Test(.timeLimit(.minutes(3))) func aPaymentCancelledWhileItWaitsLeavesTheQueue() async throws {
        let requests = CardKeyRequests()
        let (entered, enteredSignal) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseSignal) = AsyncStream.makeStream(of: Void.self)
        let first = Task {
            try await requests.one(card: 7) {
                enteredSignal.yield()
                var iterator = release.makeAsyncIterator()
                _ = await iterator.next()
                return 1
            }
        }
        var enteredIterator = entered.makeAsyncIterator()
        _ = await enteredIterator.next()
        let cancelled = Task { try await requests.one(card: 7) { 2 } }
        let third = Task { try await requests.one(card: 7) { 3 } }
        // Another card is not held up by this one.
        #expect(try await requests.one(card: 8) { 4 } == 4)
        cancelled.cancel()
        let error = await #expect(throws: WalletError.self) { try await cancelled.value }
        #expect(error?.code == .unavailable)
        releaseSignal.yield()
        #expect(try await first.value == 1)
        #expect(try await third.value == 3)
        #expect(try await requests.one(card: 7) { 5 } == 5)
    }

    /// An MG push that needs the TSP while it is away is not lost: the handler throws (the subscriber delivers it
    /// again) and forgets it, so the redelivery fetches the batch.
    @Test func anMGPushThatFindsTheTSPAwayIsProcessedWhenDeliveredAgain() async throws {
        let (wallet, _) = try await Self.digitized()
        let before = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        let push = Self.notification("REPLENISHMENT", .replenishment(.init()), sender: "MG")
        wallet.lifecycleTSP.state.withLock { $0.replenishmentFailure = RPCError(.unavailable, "the TSP is away") }
        await #expect(throws: WalletError.self) { try await wallet.notifications.handle(push) }
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).keysRemaining == before.keysRemaining)

        wallet.lifecycleTSP.state.withLock { $0.replenishmentFailure = nil }
        try await wallet.notifications.handle(push)
        let after = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(after.keysRemaining == before.keysRemaining + FakeTSPLifecycle.keysPerBatch)
        #expect(after.batches == before.batches + 1)
    }

    /// An MG push the TSP refuses for good (a token it does not know, or says is not this wallet's) is kept and
    /// logged, not thrown: a throw has the broker deliver it again, and every later message of the wallet's queue
    /// (its CARD_STATEs among them) would wait behind a push that can never succeed.
    @Test(arguments: [StatusCode.notFound, .permissionDenied, .invalidArgument])
    func anMGPushTheTSPRefusesForGoodDoesNotHoldTheQueueBack(_ code: StatusCode) async throws {
        let (wallet, _) = try await Self.digitized()
        let push = Self.notification("REPLENISHMENT", .replenishment(.init()), sender: "MG")
        wallet.lifecycleTSP.state.withLock { $0.replenishmentFailure = RPCError(code, "refused") }
        try await wallet.notifications.handle(push)
        #expect(try wallet.store.hasKept(messageID: push.messageID))
    }

    /// An MG push for a token deleted or suspended since (the TSP answers FAILED_PRECONDITION: keys go to ACTIVE
    /// tokens only) is a race of a normal run, logged at info, not at error.
    @Test func anMGPushForATokenNoLongerActiveIsNoError() async throws {
        let (wallet, _) = try await Self.digitized()
        let push = Self.notification("REPLENISHMENT", .replenishment(.init()), sender: "MG")
        wallet.lifecycleTSP.state.withLock {
            $0.replenishmentFailure = RPCError(
                .failedPrecondition, "token is DEACTIVATED; payment keys are issued to ACTIVE tokens only")
        }
        try await wallet.notifications.handle(push)
        #expect(try wallet.store.hasKept(messageID: push.messageID))
        let lines = wallet.logs.lines.filter { $0.contains(push.messageID) }
        #expect(lines.contains { $0.contains(" info ") && $0.contains("payment keys not fetched") }, "\(lines)")
        #expect(!lines.contains { $0.contains(" error ") }, "\(lines)")
    }

    /// A wallet that stops or crashes while it processes an MG push (its key batch asked of a TSP that has not
    /// answered) processes the push when the broker delivers it again after the restart: a message counts as seen
    /// only once it has been processed.
    @Test func anMGPushCutShortWhileProcessingIsProcessedWhenDeliveredAgain() async throws {
        let (wallet, _) = try await Self.digitized()
        let before = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        let push = Self.notification("REPLENISHMENT", .replenishment(.init()), sender: "MG")
        let tsp = wallet.lifecycleTSP
        tsp.state.withLock { $0.holdReplenishment = true }
        let cutShort = Task { try await wallet.notifications.handle(push) }
        var held = tsp.heldReplenishments.stream.makeAsyncIterator()
        _ = await held.next()

        // The node died there; the broker delivers the push again to the node started after it.
        tsp.state.withLock { $0.holdReplenishment = false }
        try await wallet.notifications.handle(push)
        let after = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(after.keysRemaining == before.keysRemaining + FakeTSPLifecycle.keysPerBatch)
        #expect(after.batches == before.batches + 1)
        #expect(try wallet.store.inbox().map(\.messageID) == [push.messageID])

        // The first delivery's request, answered at last, carried the id the second one asked with: its batch is
        // the one already recorded, and the wallet's count of batches stays the TSP's.
        tsp.releaseHeldReplenishment()
        _ = try? await cutShort.value
        let settled = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(settled.batches == after.batches && settled.keysRemaining == after.keysRemaining)
        #expect(tsp.recorded.issuedBatches == Int(after.batches))
    }

    /// A message the store cannot keep (the database cannot be written) is not taken as handled: the handler
    /// throws, so the subscriber has it delivered again instead of acknowledging a message the wallet never saw.
    @Test func aMessageTheStoreCannotKeepIsDeliveredAgain() async throws {
        let (wallet, _) = try await Self.digitized()
        _ = try wallet.store.database.execute("DROP TABLE inbox")
        await #expect(throws: WalletError.self) { try await wallet.notifications.handle(Self.cardState(.suspended)) }
    }

    @Test func onlyAnActiveCardPaysAndResumingRefetchesNothingWhenKeysAreLeft() async throws {
        var (wallet, events) = try await Self.digitized()
        _ = await events.next()
        _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        try await wallet.notifications.handle(Self.cardState(.suspended))
        #expect(
            await statusCode { try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
                == .failedPrecondition)
        try await wallet.notifications.handle(Self.cardState(.active))
        #expect(wallet.lifecycleTSP.recorded.replenishments.count == 1)
    }

    /// A batch the TSP issued whose answer never reached the wallet is asked for again with the same request id and
    /// recorded once: the wallet counts the batches the TSP issued, where it used to ask for a new one and leave the
    /// first unaccounted for. The request after it has an id of its own.
    @Test func aKeyBatchWhoseAnswerWasLostIsAskedForAgainByItsID() async throws {
        let (wallet, _) = try await Self.digitized()
        let tsp = wallet.lifecycleTSP
        for _ in 0..<6 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        tsp.state.withLock { $0.answersToLose = 1 }
        let lost = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        #expect(lost.keysRemaining == 3 && !lost.replenished)
        #expect(lost.replenishmentProblem.contains("the answer was lost"), "\(lost.replenishmentProblem)")
        let again = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        #expect(again.replenished && again.keysRemaining == 2 + FakeTSPLifecycle.keysPerBatch)
        let reissued = "issued for an earlier request whose answer was not recorded"
        #expect(wallet.logs.lines.contains { $0.contains(reissued) })

        let ids = tsp.recorded.replenishments.map(\.requestID)
        #expect(ids.count == 3 && !ids[0].isEmpty && ids[1] != ids[0] && ids[2] == ids[1], "\(ids)")
        let keys = try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1"))
        #expect(keys.batches == 2 && tsp.recorded.issuedBatches == 2)

        for _ in 0..<9 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        let next = tsp.recorded.replenishments.map(\.requestID)
        #expect(next.count == 4 && !ids.contains(next[3]), "\(next)")
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).batches == 3)
    }

    /// A payment that took its key is answered while the TSP still holds its new batch: the refill waits at most
    /// half of what is left of the payment's deadline (2 s at most). It waited the whole deadline, and the person
    /// was told DEADLINE_EXCEEDED for a payment that had been made.
    @Test func aPaymentIsAnsweredWhileTheTSPHoldsItsNewBatch() async throws {
        var configuration = WalletConfiguration()
        configuration.refillWaitAfterPayment = .seconds(1)
        let (wallet, _) = try await Self.digitized(configuration: configuration)
        // The first batch put in the store: fetched by the first payment, it had only the 5 s bound of a card with
        // no key left, which a loaded machine overran before the test began.
        let card = try wallet.store.card(ref: "card-1")
        _ = try wallet.store.addPaymentKeys(cardID: card.id, count: FakeTSPLifecycle.keysPerBatch)
        for _ in 0..<6 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        let tsp = wallet.lifecycleTSP
        tsp.state.withLock { $0.holdReplenishment = true }
        defer {
            tsp.state.withLock { $0.holdReplenishment = false }
            tsp.releaseHeldReplenishment()
        }
        // At most 1 s here (a node's is 2 s); the deadlines leave room for a machine the whole suite loads.
        // Answered within the deadline: past it, the call would throw DEADLINE_EXCEEDED.
        for (left, deadline) in [(UInt32(3), Duration.seconds(30)), (2, .seconds(60))] {
            let paid = try await wallet.lifecycle.usePaymentKey(
                .init(cardRef: "card-1"), options: CallOptions(timeout: deadline))
            #expect(paid.keysRemaining == left && !paid.replenished)
            // The call's own deadline or the wait around it, whichever came first: both are the 1 s.
            #expect(
                paid.replenishmentProblem.hasPrefix("the TSP's ReplenishPaymentKeys")
                    && (paid.replenishmentProblem.contains("within its deadline (1000 ms)")
                        || paid.replenishmentProblem.contains("did not answer within 1000 ms")),
                "\(paid.replenishmentProblem)")
        }
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).keysRemaining == 2)

        // With no key left the payment waits for the batch, five times as long at most, and says that no payment
        // was made, still short of its deadline.
        for _ in 0..<2 { _ = try wallet.store.usePaymentKey(cardID: card.id) }
        let error = try await #require(throws: RPCError.self) {
            try await wallet.lifecycle.usePaymentKey(
                .init(cardRef: "card-1"), options: CallOptions(timeout: .seconds(60)))
        }
        // UNAVAILABLE from the bounded wait, not DEADLINE_EXCEEDED from the call's own deadline.
        #expect(error.code == .unavailable && error.message.hasPrefix("no payment was made"), "\(error)")
    }

    /// A payment whose card's batch another request is waiting for (the TSP silent) waits no longer than its own
    /// bound, its turn included: it waited for the other request, then as long again for its own. Two payments at
    /// once on the card's last keys: the second waits its turn behind the first, whose refill the TSP holds.
    @Test func aPaymentsWaitIncludesItsTurnBehindAnotherRequest() async throws {
        var configuration = WalletConfiguration()
        configuration.refillWaitAfterPayment = .seconds(1)
        let (wallet, _) = try await Self.digitized(configuration: configuration)
        // The first batch put in the store, so that no payment waits for it under the 1 s bound (see above).
        let card = try wallet.store.card(ref: "card-1")
        _ = try wallet.store.addPaymentKeys(cardID: card.id, count: FakeTSPLifecycle.keysPerBatch)
        _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))  // 9 left
        for _ in 0..<5 { _ = try wallet.store.usePaymentKey(cardID: card.id) }  // 4 left
        let tsp = wallet.lifecycleTSP
        tsp.state.withLock { $0.holdReplenishment = true }
        defer {
            tsp.state.withLock { $0.holdReplenishment = false }
            tsp.releaseHeldReplenishment()
        }
        let lifecycle = wallet.lifecycle
        let pay = { @Sendable () async throws -> WalletV1.PaymentKeysResponse in
            try await lifecycle.usePaymentKey(.init(cardRef: "card-1"), options: CallOptions(timeout: .seconds(60)))
        }
        async let first = pay()
        async let second = pay()
        // Both answered (past their 60 s, they would throw); the one that waited its turn says its wait ran out,
        // where it waited for the other's refill and then for its own.
        let problems = try await [first, second].map(\.replenishmentProblem)
        #expect(problems.contains { $0.contains("did not answer within 1000 ms") }, "\(problems)")
    }

    /// The refill's wait: the most given, or half of what is left of the payment's deadline when that is less.
    @Test func aRefillWaitsAtMostHalfOfWhatIsLeft() {
        let most = Duration.seconds(2)
        #expect(WalletLifecycleService.refillWait(before: nil, atMost: most) == most)
        #expect(WalletLifecycleService.refillWait(before: .now + .seconds(60), atMost: most) == most)
        // 3 s left: half is 1.5 s, less than the most; the bound below leaves a descheduled thread a second.
        let half = WalletLifecycleService.refillWait(before: .now + .seconds(3), atMost: most)
        #expect(half <= .milliseconds(1_500) && half > .milliseconds(1_000), "\(half)")
        #expect(WalletLifecycleService.refillWait(before: .now - .seconds(1), atMost: most) == .milliseconds(1))
    }

    /// A payment that took its key stands when the new batch it asks for cannot be fetched: it failed UNAVAILABLE
    /// with a key spent, read the same as a payment that spent nothing. The next payment asks again. One that finds
    /// no key and cannot get a batch says that no payment was made.
    @Test func aPaymentStandsWhenItsNewBatchCannotBeFetched() async throws {
        let (wallet, _) = try await Self.digitized()
        for _ in 0..<6 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        let tsp = wallet.lifecycleTSP
        tsp.state.withLock { $0.replenishmentFailure = RPCError(.unavailable, "the TSP is away") }
        for left: UInt32 in [3, 2, 1, 0] {
            let paid = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
            #expect(paid.keysRemaining == left && !paid.replenished)
            #expect(paid.replenishmentProblem.contains("the TSP is away"), "\(paid.replenishmentProblem)")
        }
        await expectRPCError(.unavailable, "no payment was made: card-1 has no payment keys left, and the TSP's") {
            try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        }
        #expect(try await wallet.lifecycle.paymentKeys(.init(cardRef: "card-1")).keysRemaining == 0)
        tsp.state.withLock { $0.replenishmentFailure = nil }
        let refilled = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        #expect(refilled.replenished && refilled.replenishmentProblem.isEmpty)
        #expect(refilled.keysRemaining + 1 == FakeTSPLifecycle.keysPerBatch)
    }

    /// A card that becomes ACTIVE again at or below the threshold (its payments' batches were refused while it was
    /// suspended) gets a new batch then, not only at its next payment.
    @Test func aCardResumedBelowTheThresholdGetsABatch() async throws {
        let (wallet, _) = try await Self.digitized()
        for _ in 0..<7 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        let card = try wallet.store.card(ref: "card-1")
        let before = try wallet.store.paymentKeys(cardID: card.id)
        #expect(before.remaining == 13)  // the seventh payment fetched its batch at 3
        for _ in 0..<10 { _ = try wallet.store.usePaymentKey(cardID: card.id) }
        let low = try wallet.store.paymentKeys(cardID: card.id)
        #expect(low.remaining == 3)
        let keys = Self.paymentKeys(wallet)
        await keys.handle(
            WalletV1.WalletEvent(
                kind: .tokenStatusChanged, digitalCardID: card.result!.digitalCardID, tokenState: .active))
        let after = try wallet.store.paymentKeys(cardID: card.id)
        #expect(after.batches == low.batches + 1 && after.remaining == 3 + FakeTSPLifecycle.keysPerBatch)
        // With more than the threshold left, a resume fetches nothing.
        await keys.handle(
            WalletV1.WalletEvent(
                kind: .tokenStatusChanged, digitalCardID: card.result!.digitalCardID, tokenState: .active))
        #expect(try wallet.store.paymentKeys(cardID: card.id) == after)
    }

    /// An ACTIVE card whose activation the wallet did not act on (it stopped right after, so the first batch was
    /// never issued) gets its batch when the wallet starts listening again; a card that has keys, or is not
    /// digitized, gets none.
    /// The wallet's key issuing at activation, asking the harness's lifecycle TSP over the in-memory transport.
    static func paymentKeys(_ wallet: WalletHarness) -> PaymentKeysAtActivation {
        let logger = Logger(node: "wallet-node", sink: wallet.logs)
        let updates = WalletTokenUpdates(
            tsp: TspV1.TokenLifecycle.Client(wallet.tspAsWallet()), store: wallet.store, events: wallet.events,
            configuredAccountID: "wallet-account-1", logger: logger, clock: { 1 })
        return PaymentKeysAtActivation(store: wallet.store, updates: updates, logger: logger)
    }

    @Test func anActiveCardLeftWithoutKeysGetsItsBatchWhenListeningStarts() async throws {
        let (wallet, _) = try await Self.digitized()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
        _ = try await wallet.control.addCard(WalletHarness.manual())
        let second = try wallet.store.card(ref: "card-2")
        let third = try wallet.store.card(ref: "card-3")
        _ = try wallet.store.addPaymentKeys(cardID: second.id, count: 5)
        let keys = Self.paymentKeys(wallet)
        let first = try wallet.store.card(ref: "card-1")
        #expect(try wallet.store.activeCardsWithoutKeys().map(\.id) == [first.id])

        await keys.catchUp()
        #expect(try wallet.store.paymentKeys(cardID: first.id) == PaymentKeyCount(remaining: 10, batches: 1))
        #expect(try wallet.store.paymentKeys(cardID: second.id) == PaymentKeyCount(remaining: 5, batches: 1))
        #expect(try wallet.store.paymentKeys(cardID: third.id).batches == 0)
        #expect(wallet.lifecycleTSP.recorded.replenishments.count == 1)
        #expect(try wallet.store.activeCardsWithoutKeys().isEmpty)
    }

    /// A card whose payments could not get their batch is topped up in the background once the TSP answers, asking
    /// with the request id the failed refill stored; a card above the threshold, or not ACTIVE, is left alone.
    @Test func aCardLeftLowByAFailedRefillIsToppedUpInTheBackground() async throws {
        let (wallet, _) = try await Self.digitized()
        let tsp = wallet.lifecycleTSP
        _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))  // the first batch
        tsp.state.withLock { $0.replenishmentFailure = RPCError(.unavailable, "the TSP is away") }
        for _ in 0..<7 { _ = try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1")) }
        let card = try wallet.store.card(ref: "card-1")
        #expect(try wallet.store.paymentKeys(cardID: card.id) == PaymentKeyCount(remaining: 2, batches: 1))
        let keys = Self.paymentKeys(wallet)
        let topUp = PaymentKeysTopUp(store: wallet.store, updates: keys.updates, logger: keys.logger)
        #expect(await topUp.round() == 1)
        #expect(await topUp.round(failingBefore: 1) == 1)
        let warnings = wallet.logs.lines.filter { $0.contains("could not get a new batch; asking again every minute") }
        #expect(warnings.count == 1, "\(warnings)")

        tsp.state.withLock { $0.replenishmentFailure = nil }
        #expect(await topUp.round(failingBefore: 1) == 0)
        #expect(
            try wallet.store.paymentKeys(cardID: card.id)
                == PaymentKeyCount(remaining: 2 + FakeTSPLifecycle.keysPerBatch, batches: 2))
        // The fake records only the requests it answered: the first batch's and the top-up's.
        let requests = tsp.recorded.replenishments.map(\.requestID)
        #expect(requests.count == 2 && requests[0] != requests[1], "\(requests)")
        // Above the threshold now: a round asks for nothing.
        #expect(await topUp.round() == 0)
        #expect(tsp.recorded.replenishments.count == 2)
    }

    /// The background loop waits its minute between rounds and ends when the node stops (its sleep throws).
    @Test func theTopUpLoopRoundsEveryMinuteUntilTheNodeStops() async throws {
        let (wallet, _) = try await Self.digitized()
        let keys = Self.paymentKeys(wallet)
        let waits = Mutex<[UInt64]>([])
        var topUp = PaymentKeysTopUp(store: wallet.store, updates: keys.updates, logger: keys.logger)
        topUp.sleep = { milliseconds in
            let count = waits.withLock {
                $0.append(milliseconds)
                return $0.count
            }
            if count == 3 { throw CancellationError() }
        }
        await topUp.run()
        #expect(waits.withLock { $0 } == [60_000, 60_000, 60_000])
    }

    /// A digitized wallet whose TSP answers UNAVAILABLE to key requests, its card, and its key issuing.
    static func catchUpWithTheTSPAway() async throws -> (
        WalletHarness, WalletCardRecord, FakeTSPLifecycle, PaymentKeysAtActivation
    ) {
        let (wallet, _) = try await Self.digitized()
        wallet.lifecycleTSP.state.withLock { $0.replenishmentFailure = RPCError(.unavailable, "the TSP is away") }
        return (wallet, try wallet.store.card(ref: "card-1"), wallet.lifecycleTSP, Self.paymentKeys(wallet))
    }

    /// A catch-up that finds the TSP away asks again after a second, then two, …: the card gets its batch once the
    /// TSP answers, without waiting for the next start or a dropped listener.
    @Test func aCatchUpAsksAgainWhileTheTSPIsAway() async throws {
        let (wallet, card, tsp, issuing) = try await Self.catchUpWithTheTSPAway()
        var keys = issuing
        let waits = Mutex<[UInt64]>([])
        keys.sleep = { milliseconds in
            let count = waits.withLock {
                $0.append(milliseconds)
                return $0.count
            }
            // The TSP is back during the second wait.
            if count == 2 { tsp.state.withLock { $0.replenishmentFailure = nil } }
        }
        await keys.catchUp()
        #expect(waits.withLock { $0 } == [1_000, 2_000])
        #expect(try wallet.store.paymentKeys(cardID: card.id) == PaymentKeyCount(remaining: 10, batches: 1))
        #expect(wallet.logs.lines.filter { $0.contains("could not be issued to an active card") }.count == 1)
    }

    /// The retries are bounded: a TSP away for longer than every wait leaves the card to the next start, said once;
    /// a refusal (not the TSP being away) is not asked again at all.
    @Test func aCatchUpStopsAskingAfterItsLastWait() async throws {
        let (wallet, card, tsp, issuing) = try await Self.catchUpWithTheTSPAway()
        var keys = issuing
        let waits = Mutex<[UInt64]>([])
        keys.sleep = { milliseconds in waits.withLock { $0.append(milliseconds) } }
        await keys.catchUp()
        #expect(waits.withLock { $0 } == PaymentKeysAtActivation.retryWaitsMs)
        #expect(try wallet.store.paymentKeys(cardID: card.id).batches == 0)
        #expect(wallet.logs.lines.filter { $0.contains("trying again at the next start") }.count == 1)

        waits.withLock { $0 = [] }
        tsp.state.withLock { $0.replenishmentFailure = RPCError(.failedPrecondition, "the token is not active") }
        await keys.catchUp()
        #expect(waits.withLock { $0 }.isEmpty)
    }

    /// The key listener falling behind while a catch-up waits for the TSP loses no activation and repeats no batch:
    /// card-2, activated during the wait, has its event among those the full listener missed, and the catch-up run
    /// when it listens again serves it; the events it kept (card-1's activation among them) find card-1 served and
    /// ask nothing more.
    @Test func aListenerFallingBehindDuringACatchUpLosesAndRepeatsNothing() async throws {
        let (wallet, first, tsp, issuing) = try await Self.catchUpWithTheTSPAway()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        wallet.tsp.state.withLock { $0.digitize.digitalCardID = "DNITHE000000000000000002" }
        var keys = issuing
        let waits = Mutex(0)
        keys.sleep = { _ in
            let wait = waits.withLock {
                $0 += 1
                return $0
            }
            guard wait == 1 else { return }
            // card-1's activation heard again (kept: the catch-up serves card-1 before it is read), then events that
            // ask nothing fill the listener's buffer, so card-2's activation is the one it misses.
            wallet.events.publish(
                WalletV1.WalletEvent(kind: .tokenStatusChanged, digitalCardID: Self.id, tokenState: .active))
            for _ in 1..<wallet.events.capacity {
                wallet.events.publish(WalletV1.WalletEvent(kind: .selectedCardChanged))
            }
            _ = try await wallet.control.acceptTerms(.init(cardRef: "card-2"))
            tsp.state.withLock { $0.replenishmentFailure = nil }
        }
        let listening = Task { await keys.run(wallet.events) }
        defer { listening.cancel() }
        let second = try wallet.store.card(ref: "card-2")
        let clock = ContinuousClock()
        let giveUp = clock.now.advanced(by: .seconds(120))
        while try wallet.store.paymentKeys(cardID: second.id).batches == 0 && clock.now < giveUp {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try wallet.store.paymentKeys(cardID: first.id).batches == 1)
        #expect(try wallet.store.paymentKeys(cardID: second.id).batches == 1)
        #expect(tsp.recorded.replenishments.map(\.digitalCardID) == [Self.id, "DNITHE000000000000000002"])
        #expect(wallet.logs.lines.contains { $0.contains("fell behind the wallet's events") })
    }

    @Test func theFirstBatchIsIssuedWhenATokenBecomesActive() async throws {
        let (wallet, _) = try await Self.digitized()
        let keys = Self.paymentKeys(wallet)
        let card = try wallet.store.card(ref: "card-1")

        await keys.handle(.init(kind: .tokenStatusChanged, digitalCardID: Self.id, tokenState: .suspended))
        #expect(try wallet.store.paymentKeys(cardID: card.id).batches == 0)
        await keys.handle(.init(kind: .tokenizedCardAdded, digitalCardID: Self.id, tokenState: .active))
        #expect(try wallet.store.paymentKeys(cardID: card.id) == PaymentKeyCount(remaining: 10, batches: 1))
        await keys.handle(.init(kind: .tokenStatusChanged, digitalCardID: Self.id, tokenState: .active))
        #expect(try wallet.store.paymentKeys(cardID: card.id).batches == 1)
        await keys.handle(.init(kind: .tokenStatusChanged, digitalCardID: "DNITHE-unknown", tokenState: .active))
        #expect(wallet.lifecycleTSP.recorded.replenishments.count == 1)
    }
}
