import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetWire

@testable import TokenetIssuer

@Suite struct CardCareTests {
    let tsp: FakeLifecycleTSP
    let sink = MemoryLogSink()
    let party: IssuerParty
    let care: IssuerV1.IssuerCardCare.Client

    init() throws {
        (tsp, party, care) = try Support.cardCare(sink: sink)
    }

    func decide(_ cardID: String, digitalCardID: String, outcome: DigitizationOutcome) throws {
        try party.store.record(
            DecisionRecord(
                cardID: cardID, last4: "0009", digitalCardID: digitalCardID, tokenLast4: "1234",
                walletAccountID: "wa-1", inputMethod: 1, deviceID: "d-1", deviceType: "PHONE",
                risk: RiskScores(account: 1, device: 1), recommendation: 1, rule: nil, outcome: outcome),
            at: Support.now)
    }

    /// Approves `count` tokens of card-visa-approve, DNIMANY01… in the order recorded, and returns their ids.
    func manyTokens(_ count: Int) throws -> [String] {
        let ids = (1...count).map { "DNIMANY" + ($0 < 10 ? "0\($0)" : "\($0)") }
        for id in ids { try decide(Cards.visaApprove.0, digitalCardID: id, outcome: .approved) }
        return ids
    }

    @Test func tokenStateChangesGoToTheTSP() async throws {
        let response = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNITHE1", "DNITHE2"], action: .suspend, reasonCode: "LOST_CARD"))
        #expect(response.results.map(\.digitalCardID) == ["DNITHE1", "DNITHE2"])
        let sent = tsp.state.withLock { $0.changes }
        #expect(sent == [.init(digitalCardIds: ["DNITHE1", "DNITHE2"], action: .suspend, reasonCode: "LOST_CARD")])
    }

    /// Every token of a card with more tokens than one TSP call takes changes state, named by the card or one by one:
    /// 10 a call, the calls' results combined into one answer in the order sent.
    @Test func everyTokenOfACardChangesState() async throws {
        let ids = try manyTokens(23)
        let byCard = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(byCard.results.map(\.digitalCardID) == ids)
        #expect(byCard.results.allSatisfy { $0.tokenState == .suspended && $0.statusCode == 0 })
        let byID = try await care.changeTokenStates(.init(digitalCardIds: ids, action: .resume, reasonCode: "FOUND"))
        #expect(byID.results.map(\.digitalCardID) == ids)
        let sent = tsp.state.withLock { $0.changes }
        #expect(
            sent.map(\.digitalCardIds)
                == [ids[0..<10], ids[10..<20], ids[20...], ids[0..<10], ids[10..<20], ids[20...]].map(Array.init))
        #expect(sent.map(\.action) == [.suspend, .suspend, .suspend, .resume, .resume, .resume])
        #expect(sent.allSatisfy { $0.reasonCode == ($0.action == .suspend ? "LOST_CARD" : "FOUND") })

        let none = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaStepUp.0))
        #expect(none.results.isEmpty)
        #expect(tsp.state.withLock { $0.changeCalls } == 6)
    }

    /// A TSP call that fails between answered ones does not hide the others' results: its tokens each get its status
    /// (their state unknown) and the calls after it are still made. Only when no call is answered is the whole
    /// change a failure.
    @Test func aFailedCallAmongTokenStateChangesIsReportedPerToken() async throws {
        let ids = try manyTokens(23)
        tsp.state.withLock { $0.failingChangeCalls[2] = RPCError(.unavailable, "the connection to the TSP was lost") }
        let response = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(response.results.map(\.digitalCardID) == ids)
        #expect(
            response.results.map(\.statusCode) == Array(repeating: 0, count: 10)
                + Array(repeating: StatusCode.unavailable.rawValue, count: 10) + Array(repeating: 0, count: 3))
        #expect(response.results[10].tokenState == .unspecified)
        #expect(response.results[10].message.contains("state is unknown: the connection to the TSP was lost"))
        #expect(tsp.state.withLock { $0.changes.map(\.digitalCardIds) } == [Array(ids[0..<10]), Array(ids[20...])])

        tsp.state.withLock { $0.failingChangeCalls = [4: RPCError(.unavailable, "the TSP is out of reach")] }
        let failed = await Support.rpcError {
            _ = try await care.changeTokenStates(.init(digitalCardIds: ["DNITHE1"], action: .resume, reasonCode: "X"))
        }
        #expect(failed?.code == .unavailable)
        #expect(
            failed?.message.hasSuffix(
                "so the tokens' states are unknown (tokenet tsp tokens, or the TSP's token history, shows them): the TSP is out of reach"
            ) == true)
    }

    /// A card's tokens known deleted are not sent again: those the issuer deleted, and those the TSP answered as
    /// deleted (a wallet deleted them); the answer says how many were skipped, and a renewal leaves them out too.
    @Test func tokensKnownDeletedAreSkipped() async throws {
        let ids = try manyTokens(3)
        tsp.state.withLock { $0.deleted = [ids[1]] }
        let first = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(first.results.map(\.digitalCardID) == ids && first.deletedTokensSkipped == 0)
        #expect(first.results[1].tokenState == .deactivated && first.results[1].statusCode != 0)

        let second = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(second.results.map(\.digitalCardID) == [ids[0], ids[2]] && second.deletedTokensSkipped == 1)
        let deleted = try await care.changeTokenStates(
            .init(action: .delete, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(deleted.results.allSatisfy { $0.tokenState == .deactivated && $0.statusCode == 0 })
        let calls = tsp.state.withLock { $0.changeCalls }
        let none = try await care.changeTokenStates(
            .init(action: .resume, reasonCode: "FOUND", cardID: Cards.visaApprove.0))
        #expect(none.results.isEmpty && none.deletedTokensSkipped == 3)
        #expect(tsp.state.withLock { $0.changeCalls } == calls)
        // A token named one by one that the issuer knows deleted is refused by name, without a TSP call; the others
        // named with it are sent, and the results keep the order named.
        let named = try await care.changeTokenStates(
            .init(digitalCardIds: ["DNIOTHER", ids[0]], action: .resume, reasonCode: "X"))
        #expect(named.results.map(\.digitalCardID) == ["DNIOTHER", ids[0]] && named.deletedTokensSkipped == 0)
        #expect(named.results[0].statusCode == 0)
        #expect(named.results[1].statusCode == StatusCode.failedPrecondition.rawValue)
        #expect(named.results[1].tokenState == .deactivated)
        #expect(
            named.results[1].message.contains("token \"\(ids[0])\" is deleted")
                && named.results[1].message.contains("not sent to the TSP"), "\(named.results[1].message)")
        #expect(tsp.state.withLock { $0.changes.last?.digitalCardIds } == ["DNIOTHER"])
        #expect(tsp.state.withLock { $0.changeCalls } == calls + 1)

        let renewed = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(renewed.renewedDigitalCardIds.isEmpty && renewed.deletedTokensSkipped == 3)
        #expect(tsp.state.withLock { $0.renewalCalls } == 0)
        #expect(try party.store.card(id: Cards.visaApprove.0)?.pan.last4 == "0017")
    }

    /// A token the TSP tells the issuer app is deleted (CARD_STATE DEACTIVATED, here a wallet's delete) is recorded
    /// as deleted: later changes by card and renewals skip it without asking the TSP about it. Another state, or a
    /// deleted token's message delivered again, records nothing more.
    @Test func tokensTheTSPTellsDeletedAreSkipped() async throws {
        let ids = try manyTokens(3)
        let handler = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(), store: party.store)
        let states: [(Int, CardV1.TokenState)] = [(1, .deactivated), (2, .suspended), (1, .deactivated)]
        for (index, (token, state)) in states.enumerated() {
            var message = TspV1.Notification(
                messageID: "m-\(index)", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "CARD_STATE",
                cardID: ids[token])
            message.body = .cardState(.init(tokenState: state, initiator: "WALLET"))
            try await handler.handle(message)
        }
        #expect(try party.store.tokens(ofCard: Cards.visaApprove.0).deleted == [ids[1]])

        let changed = try await care.changeTokenStates(
            .init(action: .suspend, reasonCode: "LOST_CARD", cardID: Cards.visaApprove.0))
        #expect(changed.results.map(\.digitalCardID) == [ids[0], ids[2]] && changed.deletedTokensSkipped == 1)
        let renewed = try await care.renewCard(.init(cardID: Cards.visaApprove.0, pan: "4761000010000017"))
        #expect(renewed.renewedDigitalCardIds == [ids[0], ids[2]] && renewed.deletedTokensSkipped == 1)
        #expect(tsp.state.withLock { $0.renewals.map(\.0.digitalCardIds) } == [[ids[0], ids[2]]])
    }

    @Test func tokenStateChangeRefusals() async throws {
        let cases: [(IssuerV1.IssuerChangeTokenStatesRequest, StatusCode, String)] = [
            (.init(action: .suspend, reasonCode: "LOST_CARD"), .invalidArgument, "the request names neither"),
            (
                .init(digitalCardIds: ["DNITHE1"], action: .suspend, reasonCode: "LOST_CARD", cardID: "card-x"),
                .invalidArgument, "not both"
            ),
            (
                .init(
                    digitalCardIds: ["DNITHE1", "DNITHE2", "DNITHE1", "DNITHE2", "DNITHE1"], action: .suspend,
                    reasonCode: "LOST_CARD"),
                .invalidArgument, "digital_card_ids names \"DNITHE1\", \"DNITHE2\" more than once"
            ),
            (
                .init(digitalCardIds: ["DNITHE1", ""], action: .suspend, reasonCode: "LOST_CARD"),
                .invalidArgument, "digital_card_ids holds an empty id"
            ),
            (.init(action: .suspend, reasonCode: "LOST_CARD", cardID: "card-nope"), .notFound, "no card"),
            (
                .init(digitalCardIds: (0...1000).map { "DNITHE\($0)" }, action: .suspend, reasonCode: "LOST_CARD"),
                .invalidArgument, "1001 digital_card_ids: at most 1000 in one request"
            ),
        ]
        for (request, code, message) in cases {
            let error = await Support.rpcError { _ = try await care.changeTokenStates(request) }
            #expect(error?.code == code && error?.message.contains(message) == true, "\(request)")
        }
        #expect(tsp.state.withLock { $0.changeCalls } == 0)
    }

    @Test func messagesGoToTheTSP() async throws {
        let response = try await care.sendMessage(
            .init(digitalCardID: "DNITHE1", title: "Hi", body: "Body", action: "OPEN"))
        #expect(response.messageID == "msg-1")
        #expect(
            tsp.state.withLock { $0.messages }
                == [.init(digitalCardID: "DNITHE1", title: "Hi", body: "Body", action: "OPEN")])
    }

    /// The issuer app's inbox over an in-memory connection, whose cardholders sign in with `FakeLogin` (PIN 24681357,
    /// 9999 for a locked app).
    func inbox(_ handler: IssuerAppNotificationHandler) -> IssuerV1.IssuerAppInbox.Client {
        var router = RPCRouter()
        IssuerAppInboxService(
            handler: handler, tsp: party.tsp.caller, logger: Support.logger(), store: party.store, login: FakeLogin()
        ).register(on: &router)
        return IssuerV1.IssuerAppInbox.Client(Support.connect(router, as: .operator))
    }

    /// The app's inbox once the TSP's AUTHN request "authn-1" for token DNITHE1 (5.00 USD at Shop) reached it.
    func inboxWithAuthnRequest() async throws -> IssuerV1.IssuerAppInbox.Client {
        let handler = IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger())
        var message = TspV1.Notification(
            messageID: "m-1", sender: "TNS", topic: "D1_NOTIFICATION", messageType: "AUTHN", cardID: "DNITHE1")
        message.body = .authn(.init(authnRequestID: "authn-1", amountMinor: 500, currency: "USD", merchant: "Shop"))
        try await handler.handle(message)
        return inbox(handler)
    }

    @Test func cardholderAnswersAnAuthnRequestInTheApp() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let app = try await inboxWithAuthnRequest()

        let unknown = await Support.rpcError { _ = try await app.answerAuthn(.init(authnRequestID: "authn-9")) }
        #expect(unknown?.code == .notFound)
        // Proceeding authenticates the payment: the cardholder signs in first. Any operator of the app proceeded for
        // any cardholder, the app locked or never set up.
        let refusals: [(String, StatusCode)] = [
            ("", .invalidArgument), ("1111", .unauthenticated), ("9999", .resourceExhausted),
        ]
        for (pin, code) in refusals {
            let refused = await Support.rpcError {
                _ = try await app.answerAuthn(.init(authnRequestID: "authn-1", proceed: true, pin: pin))
            }
            #expect(refused?.code == code, "\(pin): \(String(describing: refused))")
        }
        #expect(tsp.state.withLock { $0.answers }.isEmpty)
        let answer = try await app.answerAuthn(.init(authnRequestID: "authn-1", proceed: true, pin: "24681357"))
        #expect(answer.status == "PROCEEDED")
        #expect(tsp.state.withLock { $0.answers } == [.init(authnRequestID: "authn-1", proceed: true)])
        let again = await Support.rpcError { _ = try await app.answerAuthn(.init(authnRequestID: "authn-1")) }
        #expect(again?.code == .failedPrecondition)
        let listed = try await app.notifications(.init())
        #expect(listed.authnRequests.map(\.status) == ["PROCEEDED"])
        #expect(listed.notifications.map(\.messageType) == ["AUTHN"])
    }

    /// An app acts for the accounts activated in it: one removed from it (or never activated there) does not
    /// authenticate its cards' payments, as app-to-app does not activate them, though the cardholder still signs in
    /// for the others. The payment was proceeded.
    @Test func aPaymentOnAnAccountNotInTheAppIsNotAuthenticatedThere() async throws {
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let card = try #require(try party.store.card(id: Cards.visaApprove.0))
        let cardholder = try #require(try party.store.cardholderID(ofAccount: card.accountID))
        let other = try #require(try party.store.accounts(ofCardholder: cardholder)?.first { $0 != card.accountID })
        try party.store.insertAppUser(
            AppUserRecord(userID: cardholder, salt: [], pinCheck: [], devicePIN: ""), nowMs: 1)
        try party.store.saveAppAccount(
            AppAccountRecord(
                userID: cardholder, accountID: other, displayName: "Other", userCredentialID: "u-1",
                userSecretSealed: [], deviceCredentialID: "d-1", deviceSecretSealed: [], digits: 6, userCounter: 0,
                deviceCounter: 0, activatedAtMs: 1))
        let app = try await inboxWithAuthnRequest()

        let refused = await Support.rpcError {
            _ = try await app.answerAuthn(.init(authnRequestID: "authn-1", proceed: true, pin: "24681357"))
        }
        #expect(refused?.code == .failedPrecondition, "\(String(describing: refused))")
        #expect(
            refused?.message
                == "card ending 0009 is of account \(card.accountID), which is not activated in \(cardholder)'s app, "
                + "so the app cannot authenticate its payments; activate it there (tokenet issuer-app "
                + "activate-linked), or cancel", "\(String(describing: refused))")
        #expect(tsp.state.withLock { $0.answers }.isEmpty)
        // Cancelling still goes through.
        let cancelled = try await app.answerAuthn(.init(authnRequestID: "authn-1", proceed: false))
        #expect(tsp.state.withLock { $0.answers } == [.init(authnRequestID: "authn-1", proceed: false)])
        #expect(!cancelled.approved)
    }

    /// A request past its expiry is listed EXPIRED, and the app refuses to answer it without asking the TSP (which
    /// would refuse the late answer); one answered in time keeps its answer after the expiry.
    @Test func anExpiredAuthnRequestIsListedExpiredAndNotAnswered() async throws {
        let clock = ManualClock()
        let nowMs = UInt64(clock.now().timeIntervalSince1970 * 1000)
        try decide(Cards.visaApprove.0, digitalCardID: "DNITHE1", outcome: .approved)
        let handler = IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), now: clock.now)
        let app = inbox(handler)
        for id in ["authn-1", "authn-2"] {
            var message = TspV1.Notification(
                messageID: "m-\(id)", sender: "TNS", topic: "D1_NOTIFICATION", messageType: "AUTHN", cardID: "DNITHE1")
            message.body = .authn(
                .init(
                    authnRequestID: id, amountMinor: 500, currency: "USD", merchant: "Shop", expiresAtMs: nowMs + 60_000
                ))
            try await handler.handle(message)
        }
        _ = try await app.answerAuthn(.init(authnRequestID: "authn-1", proceed: true, pin: "24681357"))
        #expect(try await app.notifications(.init()).authnRequests.map(\.status) == ["PROCEEDED", "PENDING"])

        clock.advance(60)
        let late = await Support.rpcError { _ = try await app.answerAuthn(.init(authnRequestID: "authn-2")) }
        #expect(late?.code == .failedPrecondition)
        #expect(late?.message.contains("authentication request \"authn-2\" expired at") == true)
        #expect(tsp.state.withLock { $0.answers } == [.init(authnRequestID: "authn-1", proceed: true)])
        #expect(try await app.notifications(.init()).authnRequests.map(\.status) == ["PROCEEDED", "EXPIRED"])
        // Kept as it was: only the listing tells it expired.
        #expect(handler.snapshot.authnRequests.map(\.status) == ["PROCEEDED", "PENDING"])
    }
}
