import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// Transactions, AUTHN, payment keys, card renewal and issuer messages: what each publishes, to whom, with which
/// fields.
@Suite struct NotificationFlowTests {
    static func transactions(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.Transactions.Client {
        TspV1.Transactions.Client(TSPHarness.connect(tsp.router, as: peer))
    }

    static func updates(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.IssuerCardUpdates.Client {
        TspV1.IssuerCardUpdates.Client(TSPHarness.connect(tsp.router, as: peer))
    }

    @Test func transactionIsNotifiedToTheWalletAndTheIssuerAppWithTheLastCall() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let operatorClient = Self.transactions(tsp, as: LifecycleTests.operator1)
        let response = try await operatorClient.simulateTransaction(
            .init(digitalCardID: id, amountMinor: 1250, currency: "usd", merchant: "Coffee Corner"))
        let now = tsp.clock.now.unixMilliseconds
        #expect(response.approved)
        #expect(response.lastCallTimestampMs == now)
        #expect(response.authnRequestID.isEmpty)
        let publish = try #require(tsp.published.of("TRANSACTION_NOTIFICATION").first)
        #expect(publish.queues == LifecycleTests.bothQueues)
        #expect(publish.notification.sender == "TNS")
        #expect(publish.notification.topic == "D1_NOTIFICATION")
        #expect(publish.notification.cardID == id)
        #expect(publish.notification.lastCallTimestampMs == now)
        #expect(
            publish.notification.body
                == .transaction(
                    .init(
                        transactionID: response.transactionID, amountMinor: 1250, currency: "USD",
                        merchant: "Coffee Corner", approved: true, transactionAtMs: now)))
        let listed = try await operatorClient.listTransactions(.init(digitalCardID: id))
        #expect(listed.transactions.map(\.transactionID) == [response.transactionID])
    }

    @Test func onlyAnActiveTokenPaysAndBadAmountsAreRefused() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let operatorClient = Self.transactions(tsp, as: LifecycleTests.operator1)
        await expectRPCError(.invalidArgument, "amount_minor must be positive") {
            try await operatorClient.simulateTransaction(.init(digitalCardID: id, amountMinor: 0, merchant: "M"))
        }
        await expectRPCError(.invalidArgument, "merchant is required") {
            try await operatorClient.simulateTransaction(.init(digitalCardID: id, amountMinor: 5))
        }
        for currency in ["DOLLARS", "XYZ"] {
            await expectRPCError(.invalidArgument, "ISO 4217 code in use") {
                try await operatorClient.simulateTransaction(
                    .init(digitalCardID: id, amountMinor: 5, currency: currency, merchant: "M"))
            }
        }
        await expectRPCError(.invalidArgument, "amount_minor is too large: a payment carries at most 12 digits") {
            try await operatorClient.simulateTransaction(
                .init(digitalCardID: id, amountMinor: 1_000_000_000_000, merchant: "M"))
        }
        // 100 characters of 2,001 bytes each: within the character count, but a notification the broker refuses,
        // so the payment would be stored and never told to the wallet or the issuer app.
        let heavy = "e" + String(repeating: "\u{301}", count: 1_000)
        await expectRPCError(.invalidArgument, "merchant is 200100 bytes") {
            try await operatorClient.simulateTransaction(
                .init(digitalCardID: id, amountMinor: 5, merchant: String(repeating: heavy, count: 100)))
        }
        #expect(try await operatorClient.listTransactions(.init()).transactions.isEmpty)
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1).changeTokenState(
            LifecycleTests.change(id, .suspend))
        await expectRPCError(.failedPrecondition, "is SUSPENDED; only an ACTIVE token can pay") {
            try await operatorClient.simulateTransaction(.init(digitalCardID: id, amountMinor: 5, merchant: "M"))
        }
        #expect(tsp.published.of("TRANSACTION_NOTIFICATION").isEmpty)
    }

    @Test func authnGoesToTheIssuerAppAndItsAnswerIsRecordedOnce() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let response = try await Self.transactions(tsp, as: LifecycleTests.operator1).simulateTransaction(
            .init(digitalCardID: id, amountMinor: 9900, merchant: "Electronics", authn: true))
        #expect(!response.approved)
        #expect(!response.authnRequestID.isEmpty)
        let authn = try #require(tsp.published.of("AUTHN").first)
        #expect(authn.queues == ["issuer/issuer-1"])
        #expect(authn.notification.sender == "TNS")
        guard case .authn(let body) = authn.notification.body else {
            Issue.record("AUTHN without its body")
            return
        }
        #expect(body.authnRequestID == response.authnRequestID)
        #expect(body.amountMinor == 9900)
        #expect(body.currency == "USD")
        #expect(body.merchant == "Electronics")
        #expect(body.expiresAtMs > tsp.clock.now.unixMilliseconds)
        #expect(tsp.published.of("TRANSACTION_NOTIFICATION").isEmpty)

        await expectRPCError(.failedPrecondition, "has not registered an issuer") {
            try await Self.transactions(tsp, as: LifecycleTests.issuer2).answerAuthn(
                .init(authnRequestID: body.authnRequestID, proceed: true))
        }
        // Registered, another issuer is refused without being told which token the request is for.
        _ = try await TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.issuer2)).registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "400005", high: "400005")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        do {
            _ = try await Self.transactions(tsp, as: LifecycleTests.issuer2).answerAuthn(
                .init(authnRequestID: body.authnRequestID, proceed: true))
            Issue.record("another issuer answered the authentication request")
        } catch let error as RPCError {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("is for another issuer's token"), "\(error.message)")
            #expect(!error.message.contains(id), "\(error.message)")
        }
        let issuer = Self.transactions(tsp, as: LifecycleTests.issuer1)
        let answer = try await issuer.answerAuthn(.init(authnRequestID: body.authnRequestID, proceed: true))
        #expect(answer.status == "PROCEEDED")
        #expect(answer.transactionID == response.transactionID)
        let again = try await issuer.answerAuthn(.init(authnRequestID: body.authnRequestID, proceed: true))
        #expect(again.status == "PROCEEDED")
        await expectRPCError(.failedPrecondition, "already answered: PROCEEDED") {
            try await issuer.answerAuthn(.init(authnRequestID: body.authnRequestID, proceed: false))
        }
        await expectRPCError(.notFound, "no authentication request") {
            try await issuer.answerAuthn(.init(authnRequestID: "authn-unknown", proceed: false))
        }
        let notified = tsp.published.of("TRANSACTION_NOTIFICATION")
        #expect(notified.count == 1)
        #expect(notified.first?.queues == LifecycleTests.bothQueues)
        if case .transaction(let transaction) = notified.first?.notification.body {
            #expect(transaction.approved)
            #expect(transaction.transactionID == response.transactionID)
        } else {
            Issue.record("TRANSACTION_NOTIFICATION without its body")
        }
        let listed = try await Self.transactions(tsp, as: LifecycleTests.operator1).listTransactions(.init())
        #expect(listed.transactions.map(\.authnStatus) == ["PROCEEDED"])
        #expect(listed.transactions.map(\.approved) == [true])
    }

    /// A token suspended or deleted while its payment waited for the cardholder does not pay when they proceed:
    /// the answer is recorded, the payment declined and notified so, as a new payment with the token is refused.
    /// Before, it was approved on a SUSPENDED or DEACTIVATED token.
    @Test(arguments: [TspV1.LifecycleAction.suspend, .delete])
    func aProceedAfterTheTokenStoppedBeingActiveDeclinesThePayment(action: TspV1.LifecycleAction) async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let payment = try await Self.transactions(tsp, as: LifecycleTests.operator1).simulateTransaction(
            .init(digitalCardID: id, amountMinor: 800, merchant: "Midway", authn: true))
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1).changeTokenState(
            LifecycleTests.change(id, action))
        let issuer = Self.transactions(tsp, as: LifecycleTests.issuer1)
        let answer = try await issuer.answerAuthn(.init(authnRequestID: payment.authnRequestID, proceed: true))
        let state = action == .suspend ? "SUSPENDED" : "DEACTIVATED"
        #expect(answer.status == "PROCEEDED" && !answer.approved)
        #expect(answer.declineReason == "token \"\(id)\" is \(state); only an ACTIVE token can pay")
        let again = try await issuer.answerAuthn(.init(authnRequestID: payment.authnRequestID, proceed: true))
        #expect(!again.approved && again.declineReason.contains("was no longer ACTIVE and is now \(state)"))
        guard case .transaction(let body) = tsp.published.of("TRANSACTION_NOTIFICATION").last?.notification.body
        else {
            Issue.record("no TRANSACTION_NOTIFICATION after the answer")
            return
        }
        #expect(!body.approved && body.authnStatus == "PROCEEDED")
        let listed = try await Self.transactions(tsp, as: LifecycleTests.operator1).listTransactions(.init())
        #expect(listed.transactions.map(\.approved) == [false])
    }

    /// An authentication request nobody answered in time is listed EXPIRED, as the issuer app lists it, and can no
    /// longer be answered; before its expiry it is PENDING.
    @Test func cancelledAuthnIsNotifiedDeclinedAndExpiredOnesAreListedExpired() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let operatorClient = Self.transactions(tsp, as: LifecycleTests.operator1)
        let issuer = Self.transactions(tsp, as: LifecycleTests.issuer1)
        let first = try await operatorClient.simulateTransaction(
            .init(digitalCardID: id, amountMinor: 100, merchant: "A", authn: true))
        let cancelled = try await issuer.answerAuthn(.init(authnRequestID: first.authnRequestID, proceed: false))
        #expect(cancelled.status == "CANCELLED")
        if case .transaction(let body) = tsp.published.of("TRANSACTION_NOTIFICATION").last?.notification.body {
            #expect(!body.approved)
        } else {
            Issue.record("no TRANSACTION_NOTIFICATION after the answer")
        }
        let second = try await operatorClient.simulateTransaction(
            .init(digitalCardID: id, amountMinor: 100, merchant: "B", authn: true))
        let before = try await operatorClient.listTransactions(.init()).transactions.map(\.authnStatus)
        #expect(before == ["CANCELLED", "PENDING"])
        tsp.clock.advance(seconds: 301)
        await expectRPCError(.failedPrecondition, "has expired (it is listed EXPIRED); it can no longer be answered") {
            try await issuer.answerAuthn(.init(authnRequestID: second.authnRequestID, proceed: true))
        }
        let listed = try await operatorClient.listTransactions(.init()).transactions
        #expect(listed.map(\.authnStatus) == ["CANCELLED", "EXPIRED"])
        #expect(listed.map(\.approved) == [false, false])
    }

    /// An AUTHN nobody answers is declined at its expiry by the node's own sweep, and the wallet and the issuer app
    /// are told (TRANSACTION_NOTIFICATION, not approved, `authn_status` EXPIRED), once. Before, only a listing
    /// showed it EXPIRED, and the wallet never heard what became of the payment. An answered one is left alone.
    @Test func anUnansweredAuthnIsDeclinedAtItsExpiryAndBothPartiesAreTold() async throws {
        var configuration = TSPHarness.configuration
        configuration.authnLifetime = .seconds(60)
        let background = BackgroundTasks()
        defer { background.cancel() }
        let tsp = try TSPHarness.make(configuration: configuration, background: background)
        let id = try await LifecycleTests.activeToken(tsp)
        let operatorClient = Self.transactions(tsp, as: LifecycleTests.operator1)
        let issuer = Self.transactions(tsp, as: LifecycleTests.issuer1)
        let paidAtMs = tsp.clock.now.unixMilliseconds
        let waiting = try await operatorClient.simulateTransaction(
            .init(digitalCardID: id, amountMinor: 2500, merchant: "Slow", authn: true))
        let answered = try await operatorClient.simulateTransaction(
            .init(digitalCardID: id, amountMinor: 100, merchant: "Quick", authn: true))
        _ = try await issuer.answerAuthn(.init(authnRequestID: answered.authnRequestID, proceed: true))
        func told() -> [TspV1.TransactionBody] {
            tsp.published.of("TRANSACTION_NOTIFICATION").compactMap {
                guard case .transaction(let body) = $0.notification.body else { return nil }
                return body.transactionID == waiting.transactionID ? body : nil
            }
        }

        // Not yet due: sweeps come and go without a word.
        tsp.clock.advance(seconds: 59)
        try await Task.sleep(for: TSPService.authnSweepInterval * 2)
        #expect(told().isEmpty)

        tsp.clock.advance(seconds: 2)
        #expect(await NotificationSubscriberTests.eventually { !told().isEmpty }, "\(tsp.logs.lines.suffix(5))")
        let body = try #require(told().first)
        #expect(!body.approved)
        #expect(body.authnStatus == "EXPIRED")
        #expect(body.amountMinor == 2500)
        // The payment keeps its own time, as the TSP's listing shows it; the decline is the token's last call.
        #expect(body.transactionAtMs == paidAtMs)
        let publish = tsp.published.of("TRANSACTION_NOTIFICATION").first {
            if case .transaction(let told) = $0.notification.body {
                told.transactionID == waiting.transactionID
            } else {
                false
            }
        }
        #expect(publish?.queues == LifecycleTests.bothQueues)
        #expect(publish?.notification.lastCallTimestampMs == tsp.clock.now.unixMilliseconds)
        #expect(tsp.logs.lines.contains { $0.contains("authentication request expired; payment declined") })

        await expectRPCError(.failedPrecondition, "has expired (it is listed EXPIRED); it can no longer be answered") {
            try await issuer.answerAuthn(.init(authnRequestID: waiting.authnRequestID, proceed: true))
        }
        let listed = try await operatorClient.listTransactions(.init()).transactions
        #expect(listed.map(\.authnStatus) == ["EXPIRED", "PROCEEDED"])
        #expect(listed.map(\.approved) == [false, true])
        // Declined once: later sweeps find nothing more to do.
        try await Task.sleep(for: TSPService.authnSweepInterval * 2)
        #expect(told().count == 1)
    }

    @Test func walletReplenishesItsKeysAndTheIssuerAppIsNotified() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let batch = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 2))
        #expect(batch.keysIssued == LifecycleService.keysPerBatch)
        #expect(!batch.batchID.isEmpty)
        let publish = try #require(tsp.published.of("REPLENISHMENT").first)
        #expect(publish.queues == ["issuer/issuer-1"])
        #expect(publish.notification.sender == "MG")
        #expect(publish.notification.cardID == id)
        #expect(publish.notification.body == .replenishment(.init(keysIssued: 10, keysRemainingBefore: 2)))
        await expectRPCError(.permissionDenied, "not digitized through this wallet") {
            try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet2).replenishPaymentKeys(
                .init(digitalCardID: id, keysRemaining: 0))
        }
        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        await expectRPCError(.failedPrecondition, "ACTIVE tokens only") {
            try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0))
        }
    }

    /// A wallet that asks again with the id of a request whose answer it never recorded gets that batch again: one
    /// batch, one MG REPLENISHMENT to the issuer app. A new id gets a new batch; another token's id space is its own.
    @Test func aKeyBatchRequestAskedAgainGetsTheSameBatch() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let wallet = LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1)
        let first = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 2, requestID: "r-1"))
        let again = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0, requestID: "r-1"))
        #expect(!first.reissued && again.reissued)
        #expect(again.batchID == first.batchID && again.keysIssued == first.keysIssued)
        #expect(try Self.keyBatches(tsp, id) == 1)
        #expect(tsp.published.of("REPLENISHMENT").count == 1)
        #expect(tsp.logs.lines.contains { $0.contains("key batch answered again") && $0.contains("r-1") })

        let next = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0, requestID: "r-2"))
        #expect(!next.reissued && next.batchID != first.batchID)
        let unnamed = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0))
        let unnamedAgain = try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0))
        #expect(unnamed.batchID != unnamedAgain.batchID && !unnamedAgain.reissued)
        #expect(try Self.keyBatches(tsp, id) == 4)
        #expect(tsp.published.of("REPLENISHMENT").count == 4)

        await expectRPCError(.invalidArgument, "request_id has 65 bytes; at most 64") {
            try await wallet.replenishPaymentKeys(
                .init(digitalCardID: id, keysRemaining: 0, requestID: String(repeating: "r", count: 65)))
        }
        await expectRPCError(.invalidArgument, "request_id must be free of card numbers") {
            try await wallet.replenishPaymentKeys(
                .init(digitalCardID: id, keysRemaining: 0, requestID: "key-4111-1111-1111-1111"))
        }
        await expectRPCError(.invalidArgument, "request_id must be 1 to 64 characters without spaces, control") {
            try await wallet.replenishPaymentKeys(
                .init(digitalCardID: id, keysRemaining: 0, requestID: "line\nforged=1 \u{202E}evil"))
        }
        // A token no longer ACTIVE gets no new batch; a request asked again is answered with the batch it was
        // issued, so a wallet whose answer was lost while the token was suspended learns what it holds.
        _ = try await wallet.changeTokenState(LifecycleTests.change(id, .suspend))
        await expectRPCError(.failedPrecondition, "ACTIVE tokens only") {
            try await wallet.replenishPaymentKeys(.init(digitalCardID: id, keysRemaining: 0, requestID: "r-3"))
        }
        let afterSuspend = try await wallet.replenishPaymentKeys(
            .init(digitalCardID: id, keysRemaining: 0, requestID: "r-1"))
        #expect(afterSuspend.reissued && afterSuspend.batchID == first.batchID)
        #expect(try Self.keyBatches(tsp, id) == 4)
    }

    static func keyBatches(_ tsp: TSPHarness, _ id: String) throws -> Int {
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        defer { try? store.database.close() }
        return try store.keyBatchCount(of: id)
    }

    @Test func mgPushAsksTheWalletToReplenish() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let response = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1).requestReplenishment(
            .init(digitalCardID: id))
        let publish = try #require(tsp.published.of("REPLENISHMENT").first)
        #expect(response.messageID == "msg-1")
        #expect(publish.queues == ["wallet/wallet-1"])
        #expect(publish.notification.sender == "MG")

        // A token no longer ACTIVE: the refusal says what was asked, not "only ACTIVE tokens pay".
        let operatorLifecycle = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)
        _ = try await operatorLifecycle.changeTokenState(LifecycleTests.change(id, .delete))
        await expectRPCError(.failedPrecondition, "is DEACTIVATED; a replenishment is asked only of an ACTIVE token") {
            try await operatorLifecycle.requestReplenishment(.init(digitalCardID: id))
        }
    }

    @Test func renewedCardKeepsItsTokenAndTheIssuerAppResynchronises() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let renewed = TSPHarness.card("4111111111111129", month: "08", year: "2031")
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        let response = try await updates.renewCard(
            .init(
                digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed), previousCardID: "card-visa",
                newCardID: "card-visa-2031"))
        #expect(response.renewedDigitalCardIds == [id])
        #expect(response.panLast4 == "1129")
        #expect(response.expiry == "08/31")
        let token = try #require(try await tsp.control.listTokens(.init()).tokens.first)
        #expect(token.digitalCardID == id)
        #expect(token.state == .active)
        #expect(token.panLast4 == "1129")
        let publish = try #require(tsp.published.of("CARD_RENEWAL").first)
        #expect(publish.queues == ["wallet/wallet-1", "issuer/issuer-1"])
        #expect(publish.notification.sender == "CPS")
        #expect(
            publish.notification.body
                == .cardRenewal(
                    .init(previousCardID: "card-visa", newCardID: "card-visa-2031", panLast4: "1129", expiry: "08/31")))
        _ = try await Self.transactions(tsp, as: LifecycleTests.operator1).simulateTransaction(
            .init(digitalCardID: id, amountMinor: 1, merchant: "still works"))
        #expect(!tsp.logs.lines.joined().contains("4111111111111129"))

        await expectRPCError(.failedPrecondition, "the renewed card is Mastercard") {
            try await updates.renewCard(
                .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(TSPHarness.card(TSPHarness.mastercard))))
        }
        await expectRPCError(.failedPrecondition, "has not registered an issuer") {
            try await Self.updates(tsp, as: LifecycleTests.issuer2).renewCard(
                .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
        }
        // The card ids go to the wallet and the issuer app as they are: one no listing could show, or too large for
        // the message, is refused before anything is renewed.
        for (previous, new) in [("card\nvisa", "card-visa-2031"), ("card-visa", String(repeating: "c", count: 40_000))]
        {
            await expectRPCError(.invalidArgument, "must be 1 to 64 characters") {
                try await updates.renewCard(
                    .init(
                        digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed), previousCardID: previous,
                        newCardID: new))
            }
        }
        #expect(tsp.published.of("CARD_RENEWAL").count == 1)
    }

    /// A repeat of a renewal whose calls were applied in part (their answers lost) renews the tokens still on the old
    /// card; those holding the new one already are answered as renewed, with no second history row or CARD_RENEWAL:
    /// the wallet and the issuer app heard of the one renewal twice.
    @Test func aRepeatedRenewalAnnouncesOnlyTheTokensItChanges() async throws {
        let tsp = try TSPHarness.make()
        let ids = try await tsp.activeTokens(2)
        let renewed = try TSPHarness.encrypted(TSPHarness.card("4111111111111129", month: "08", year: "2031"))
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        _ = try await updates.renewCard(.init(digitalCardIds: [ids[0]], cardData: renewed))
        let repeated = try await updates.renewCard(.init(digitalCardIds: ids, cardData: renewed))
        #expect(repeated.renewedDigitalCardIds == ids)
        #expect(repeated.results.map(\.statusCode) == [0, 0])
        #expect(tsp.published.of("CARD_RENEWAL").count == 2)
        for id in ids {
            let rows = try await tsp.control.tokenHistory(.init(digitalCardID: id)).events
            #expect(rows.filter { $0.reason.hasPrefix("card renewed") }.count == 1, "\(id): \(rows)")
        }
    }

    /// A renewal answers each token on its own: a token that cannot take the renewed card (deleted, unknown to the
    /// TSP) is refused in its result, for a reason renewing again does not remove, and the others are renewed, so one
    /// such token no longer refuses (and strands) the whole batch.
    @Test func aRenewalRefusesEachTokenThatCannotTakeItAndRenewsTheOthers() async throws {
        let tsp = try TSPHarness.make()
        let ids = try await tsp.activeTokens(3)
        let deleted = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.issuer1).changeIssuerTokenStates(
            .init(digitalCardIds: [ids[1]], action: .delete, reasonCode: "LOST_CARD"))
        try #require(deleted.results.first?.tokenState == .deactivated)
        let renewed = TSPHarness.card("4111111111111129", month: "08", year: "2031")
        let response = try await Self.updates(tsp, as: LifecycleTests.issuer1).renewCard(
            .init(
                digitalCardIds: [ids[0], "DNITHE-unknown", ids[1], ids[2]],
                cardData: try TSPHarness.encrypted(renewed)))
        #expect(response.renewedDigitalCardIds == [ids[0], ids[2]])
        #expect(response.results.map(\.digitalCardID) == [ids[0], "DNITHE-unknown", ids[1], ids[2]])
        #expect(
            response.results.map(\.statusCode) == [
                0, StatusCode.notFound.rawValue, StatusCode.failedPrecondition.rawValue, 0,
            ])
        #expect(response.results.map(\.tokenState) == [.active, .unspecified, .deactivated, .active])
        #expect(response.results[1].message.contains("no token has digital card id"))
        #expect(response.results[2].message.contains("is deleted"))
        #expect(tsp.published.of("CARD_RENEWAL").count == 2)
        let held = try await Self.updates(tsp, as: LifecycleTests.issuer1).getFundingCards(
            .init(digitalCardIds: ids, cardData: try TSPHarness.encrypted(renewed)))
        #expect(held.fundingCards.map(\.panMatches) == [true, false, true])
    }

    /// With two issuers registered, each learns about and renews its own tokens only: issuer B asking about issuer
    /// A's token is refused for that token alone (PERMISSION_DENIED in its own answer, its state, number and expiry
    /// not told) while the call answers the other tokens asked about, and B's renewal naming it is refused for that token alone and
    /// leaves it on A's card.
    @Test func anotherIssuerMayNotAskAboutOrRenewATokenNotItsOwn() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let bankB = TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.issuer2))
        _ = try await bankB.registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "400005", high: "400005")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let asB = Self.updates(tsp, as: LifecycleTests.issuer2)
        let renewed = TSPHarness.card("4111111111111129", month: "08", year: "2031")
        let foreign = TspV1.FundingCard(
            digitalCardID: id, statusCode: StatusCode.permissionDenied.rawValue,
            message: "token \"\(id)\" belongs to another issuer")
        let asked = try await asB.getFundingCards(
            .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
        #expect(asked.fundingCards == [foreign])
        let mixed = try await asB.getFundingCards(.init(digitalCardIds: ["DNITHE-unknown", id]))
        #expect(
            mixed.fundingCards == [
                .init(
                    digitalCardID: "DNITHE-unknown", statusCode: StatusCode.notFound.rawValue,
                    message: "no token has digital card id \"DNITHE-unknown\""),
                foreign,
            ])
        // A number of B's own ranges (one of A's is refused as a whole, as outside them).
        let refused = try await asB.renewCard(
            .init(
                digitalCardIds: [id],
                cardData: try TSPHarness.encrypted(TSPHarness.card("4000056655665556", month: "08", year: "2031"))))
        #expect(refused.renewedDigitalCardIds.isEmpty)
        #expect(
            refused.results == [
                .init(
                    digitalCardID: id, tokenState: .unspecified, statusCode: StatusCode.permissionDenied.rawValue,
                    message: "token \"\(id)\" belongs to another issuer")
            ])
        #expect(tsp.published.of("CARD_RENEWAL").isEmpty)

        let asA = try await Self.updates(tsp, as: LifecycleTests.issuer1).getFundingCards(
            .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
        #expect(
            asA.fundingCards == [
                .init(digitalCardID: id, tokenState: .active, panLast4: "1111", expiry: "12/30", panMatches: false)
            ])
    }

    /// GetFundingCards tells the issuer what the TSP holds for its tokens: the number, by whether it is the card the
    /// issuer sent encrypted (never in clear), and the expiry, recorded at digitization and by each renewal. An unknown
    /// token holds nothing; a node that registered no issuer may not ask.
    @Test func theIssuerLearnsWhichCardItsTokensHold() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        let renewed = TSPHarness.card("4111111111111129", month: "08", year: "2031")
        let before = try await updates.getFundingCards(
            .init(digitalCardIds: [id, "DNITHE-unknown"], cardData: try TSPHarness.encrypted(renewed)))
        #expect(
            before.fundingCards == [
                .init(digitalCardID: id, tokenState: .active, panLast4: "1111", expiry: "12/30", panMatches: false),
                .init(
                    digitalCardID: "DNITHE-unknown", statusCode: StatusCode.notFound.rawValue,
                    message: "no token has digital card id \"DNITHE-unknown\""),
            ])

        _ = try await updates.renewCard(.init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
        let after = try await updates.getFundingCards(
            .init(digitalCardIds: [id], cardData: try TSPHarness.encrypted(renewed)))
        #expect(
            after.fundingCards == [
                .init(digitalCardID: id, tokenState: .active, panLast4: "1129", expiry: "08/31", panMatches: true)
            ])
        let unasked = try await updates.getFundingCards(.init(digitalCardIds: [id]))
        #expect(unasked.fundingCards.first?.panMatches == false && unasked.fundingCards.first?.expiry == "08/31")
        #expect(!tsp.logs.lines.joined().contains("4111111111111129"))

        await expectRPCError(.invalidArgument, "give 1 to 10 digital_card_ids") {
            try await updates.getFundingCards(.init())
        }
        await expectRPCError(.invalidArgument, "names \"\(id)\" more than once; name each token once") {
            try await updates.getFundingCards(.init(digitalCardIds: [id, id]))
        }
        await expectRPCError(.invalidArgument, "names \"\(id)\" more than once; name each token once") {
            try await updates.renewCard(
                .init(
                    digitalCardIds: [id, id],
                    cardData: try TSPHarness.encrypted(TSPHarness.card("4111111111111129", month: "07", year: "2031"))))
        }
        await expectRPCError(.failedPrecondition, "has not registered an issuer") {
            try await Self.updates(tsp, as: LifecycleTests.issuer2).getFundingCards(.init(digitalCardIds: [id]))
        }
        await expectRPCError(.permissionDenied, "role operator may not call") {
            try await Self.updates(tsp, as: LifecycleTests.operator1).getFundingCards(.init(digitalCardIds: [id]))
        }
    }

    @Test func issuerMessageReachesTheWalletAndTheIssuerApp() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        let response = try await updates.sendCardMessage(
            .init(digitalCardID: id, title: "New benefits", body: "Your card now earns 2%", action: "OPEN_OFFERS"))
        #expect(!response.messageID.isEmpty)
        let publish = try #require(tsp.published.of("MESSAGING").first)
        #expect(publish.queues == LifecycleTests.bothQueues)
        #expect(publish.notification.sender == "CPS")
        #expect(publish.notification.cardID == id)
        #expect(
            publish.notification.body
                == .messaging(.init(title: "New benefits", body: "Your card now earns 2%", action: "OPEN_OFFERS")))
        await expectRPCError(.invalidArgument, "title and body are required") {
            try await updates.sendCardMessage(.init(digitalCardID: id, title: "", body: "x"))
        }
        // A card number anywhere in the message is masked before the broker keeps it, the action included.
        _ = try await updates.sendCardMessage(
            .init(digitalCardID: id, title: "t 4111111111111111", body: "b", action: "5400000010000037"))
        #expect(
            tsp.published.of("MESSAGING").last?.notification.body
                == .messaging(.init(title: "t ************1111", body: "b", action: "************0037")))
    }

    /// A deleted token is in no wallet: a message about it is refused, as paying with it or resuming it is, instead
    /// of reaching the wallet and the issuer app about a card its holder removed.
    @Test func noMessageGoesAboutADeletedToken() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.wallet1).changeTokenState(
            LifecycleTests.change(id, .delete))
        await expectRPCError(.failedPrecondition, "is deleted: it is in no wallet, so no message goes about it") {
            try await Self.updates(tsp, as: LifecycleTests.issuer1).sendCardMessage(
                .init(digitalCardID: id, title: "Hi", body: "x"))
        }
        #expect(tsp.published.of("MESSAGING").isEmpty)
    }

    /// The limits hold in bytes too: a character may take many (a letter with combining marks), and the action had
    /// no limit at all, so a message within the character counts could exceed what the broker takes, and the
    /// issuer heard only that it "could not be queued" (FAILED_PRECONDITION), not what to shorten.
    @Test func anIssuerMessageTooLargeInBytesIsRefusedNamingTheField() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        // One character of 41 scalars (81 bytes of UTF-8).
        let heavy = "e" + String(repeating: "\u{301}", count: 40)
        #expect(heavy.count == 1)
        await expectRPCError(.invalidArgument, "body is 81000 bytes") {
            try await updates.sendCardMessage(
                .init(digitalCardID: id, title: "Hi", body: String(repeating: heavy, count: 1_000)))
        }
        await expectRPCError(.invalidArgument, "title is 4050 bytes") {
            try await updates.sendCardMessage(
                .init(digitalCardID: id, title: String(repeating: heavy, count: 50), body: "x"))
        }
        await expectRPCError(.invalidArgument, "action is 70000 bytes") {
            try await updates.sendCardMessage(
                .init(digitalCardID: id, title: "Hi", body: "x", action: String(repeating: "A", count: 70_000)))
        }
        #expect(tsp.published.of("MESSAGING").isEmpty)
    }

    /// A message the broker cannot store is answered with the broker's own status: INTERNAL for a failure, and
    /// RESOURCE_EXHAUSTED with what to do for a full disk. Both were FAILED_PRECONDITION "could not be queued for the
    /// card's parties", as if the card had no party to tell, and so was a request to replenish.
    @Test func aMessageTheBrokerCannotStoreGetsTheBrokersStatus() async throws {
        let tsp = try TSPHarness.make()
        let id = try await LifecycleTests.activeToken(tsp)
        let updates = Self.updates(tsp, as: LifecycleTests.issuer1)
        let message = TspV1.SendCardMessageRequest(digitalCardID: id, title: "Hi", body: "there")
        tsp.published.fail(true)
        await expectRPCError(.internal, "broker down") { try await updates.sendCardMessage(message) }
        tsp.published.fail(with: TSPError.internal("storing notifications", try DiskFullTests.diskFullError()))
        await expectRPCError(.resourceExhausted, "its disk is full; free space on the disk") {
            try await updates.sendCardMessage(message)
        }
        let lifecycle = TspV1.TokenLifecycle.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.operator1))
        await expectRPCError(.resourceExhausted, "its disk is full") {
            try await lifecycle.requestReplenishment(.init(digitalCardID: id))
        }
        tsp.published.fail(with: nil)
        #expect(try await updates.sendCardMessage(message).messageID.hasPrefix("msg-"))
        // SendCardMessage's second failure may come within its first one's throttle (a "… failed" line a second per
        // method); RequestReplenishment's is its first.
        #expect(
            tsp.logs.lines.contains { $0.contains("RequestReplenishment failed") && $0.contains("disk is full") },
            "\(tsp.logs.lines)")
    }
}
