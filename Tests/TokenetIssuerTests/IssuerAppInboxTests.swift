import Foundation
import Testing
import TokenetNode
import TokenetWire

@testable import TokenetIssuer

/// The issuer app's inbox as a state machine: each message type's fields become one action; AUTHN requests wait
/// for an answer; renewals resynchronise card ids; everything is kept for operators.
@Suite struct IssuerAppInboxTests {
    static func message(
        _ type: String, body: TspV1.Notification.Body?, sender: String = "CPS", cardID: String = "DNITHE1",
        lastCall: UInt64 = 0
    ) -> TspV1.Notification {
        var message = TspV1.Notification(
            messageID: "m-\(type)", sender: sender, topic: "D1_NOTIFICATION", messageType: type, cardID: cardID,
            lastCallTimestampMs: lastCall)
        message.body = body
        return message
    }

    /// A card state says why and who changed it, as the wallet's inbox does: a suspension taken over by a higher
    /// party read the same as the one before it.
    @Test func aCardStateSaysWhyAndWho() {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(
            Self.message(
                "CARD_STATE",
                body: .cardState(.init(tokenState: .suspended, reasonCode: "LOST_CARD", initiator: "issuer"))))
        _ = inbox.receive(Self.message("CARD_STATE", body: .cardState(.init(tokenState: .active))))
        #expect(
            inbox.notifications.map(\.action) == [
                "card DNITHE1 is now SUSPENDED (LOST_CARD by issuer)", "card DNITHE1 is now ACTIVE",
            ])
    }

    @Test func eachTypeBecomesItsAction() {
        var inbox = IssuerAppInbox()
        let state = TspV1.CardStateBody(tokenState: .suspended, reasonCode: "LOST_CARD", initiator: "issuer")
        #expect(
            inbox.receive(Self.message("CARD_STATE", body: .cardState(state)))
                == .refreshCardState(cardID: "DNITHE1", state: .suspended))
        #expect(
            inbox.receive(
                Self.message(
                    "REPLENISHMENT", body: .replenishment(.init(keysIssued: 10, keysRemainingBefore: 2)),
                    sender: "MG"))
                == .noteReplenishment(cardID: "DNITHE1", keysIssued: 10))
        let transaction = TspV1.TransactionBody(
            transactionID: "txn-1", amountMinor: 1250, currency: "USD", merchant: "Coffee", approved: true,
            transactionAtMs: 5)
        #expect(
            inbox.receive(
                Self.message(
                    "TRANSACTION_NOTIFICATION", body: .transaction(transaction), sender: "TNS", lastCall: 5))
                == .showTransaction(cardID: "DNITHE1", transaction, lastCallTimestampMs: 5))
        let authn = TspV1.AuthnBody(
            authnRequestID: "authn-1", amountMinor: 9900, currency: "USD", merchant: "Shop", expiresAtMs: 9)
        #expect(inbox.receive(Self.message("AUTHN", body: .authn(authn), sender: "TNS")) == .askCardholder(authn))
        let renewal = TspV1.CardRenewalBody(
            previousCardID: "card-1", newCardID: "card-1b", panLast4: "1129", expiry: "08/31")
        #expect(
            inbox.receive(Self.message("CARD_RENEWAL", body: .cardRenewal(renewal)))
                == .resynchroniseCardIDs(digitalCardID: "DNITHE1", renewal))
        let text = TspV1.MessagingBody(title: "Hello", body: "New offer", action: "OPEN_OFFERS")
        #expect(
            inbox.receive(Self.message("MESSAGING", body: .messaging(text)))
                == .showMessage(cardID: "DNITHE1", text))

        #expect(inbox.notifications.count == 6)
        #expect(inbox.notifications.allSatisfy { $0.processed })
        #expect(
            inbox.notifications.map(\.messageType)
                == ["CARD_STATE", "REPLENISHMENT", "TRANSACTION_NOTIFICATION", "AUTHN", "CARD_RENEWAL", "MESSAGING"])
        #expect(inbox.notifications.map(\.cardID) == ["DNITHE1", "DNITHE1", "DNITHE1", "", "", "DNITHE1"])
        #expect(inbox.notifications.map(\.lastCallTimestampMs) == [0, 0, 5, 0, 0, 0])
        #expect(inbox.notifications[2].action == "card DNITHE1: 12.50 USD at Coffee (approved)")
        #expect(inbox.notifications[5].action.contains("Hello — New offer [OPEN_OFFERS]"))
        #expect(inbox.authnRequests.map(\.status) == ["PENDING"])
        #expect(
            inbox.response.cardIds
                == [.init(digitalCardID: "DNITHE1", cardID: "card-1b", panLast4: "1129", expiry: "08/31")])
    }

    @Test func otherSendersUnknownTypesAndMissingBodiesAreHandedToTheApp() {
        var inbox = IssuerAppInbox()
        let fromIssuer = Self.message("MESSAGING", body: .opaque(Data([9])), sender: "tokenet-bank")
        #expect(inbox.receive(fromIssuer) == .handToApp(fromIssuer))
        let unknown = Self.message("LOYALTY_POINTS", body: nil)
        #expect(inbox.receive(unknown) == .handToApp(unknown))
        let bodiless = Self.message("CARD_STATE", body: nil)
        #expect(inbox.receive(bodiless) == .handToApp(bodiless))
        #expect(inbox.notifications.map(\.processed) == [false, true, true])
        #expect(inbox.notifications.map(\.messageType) == ["", "UNKNOWN", "CARD_STATE"])
        #expect(inbox.notifications[0].notification == fromIssuer)
        #expect(inbox.notifications[0].action.hasPrefix("handed to the app"))
    }

    @Test func authnIsAnsweredOnce() throws {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(
            Self.message("AUTHN", body: .authn(.init(authnRequestID: "authn-1", amountMinor: 1)), sender: "TNS"))
        #expect(try inbox.pendingAuthn("authn-1", nowMs: 1).amountMinor == 1)
        #expect(throws: IssuerAppInbox.AnswerRefusal.unknown("authn-2")) { try inbox.pendingAuthn("authn-2", nowMs: 1) }
        inbox.answered("authn-1", status: "CANCELLED", nowMs: 5)
        #expect(throws: IssuerAppInbox.AnswerRefusal.alreadyAnswered("authn-1", status: "CANCELLED")) {
            try inbox.pendingAuthn("authn-1", nowMs: 6)
        }
        // A redelivered AUTHN does not reopen the request.
        _ = inbox.receive(
            Self.message("AUTHN", body: .authn(.init(authnRequestID: "authn-1", amountMinor: 1)), sender: "TNS"))
        #expect(inbox.authnRequests.map(\.status) == ["CANCELLED"])
    }

    /// A request past its expiry unanswered is listed EXPIRED, and the message that asked it no longer invites an
    /// answer: it went on saying "proceed or cancel", which the TSP then refused.
    @Test func anExpiredRequestIsNoLongerAskedFor() throws {
        var inbox = IssuerAppInbox()
        let body = TspV1.AuthnBody(
            authnRequestID: "authn-1", amountMinor: 700, currency: "USD", merchant: "Late", expiresAtMs: 10_000)
        _ = inbox.receive(Self.message("AUTHN", body: .authn(body), sender: "TNS"), nowMs: 1_000)
        let all = try PageRequest(size: 100, token: "", call: "Notifications")
        let before = try inbox.page(all, nowMs: 5_000)
        #expect(
            before.notifications.map(\.action) == [
                "authenticate 7.00 USD at Late? (request authn-1: proceed or cancel)"
            ])
        let after = try inbox.page(all, nowMs: 10_000)
        #expect(after.notifications.map(\.action) == ["authenticate 7.00 USD at Late? (request authn-1: EXPIRED)"])
        #expect(after.authnRequests.map(\.status) == ["EXPIRED"])
    }

    @Test func theInboxIsBounded() {
        var inbox = IssuerAppInbox()
        for index in 0..<(IssuerAppInbox.capacity + 3) {
            var message = Self.message("UNKNOWN", body: nil)
            message.messageID = "m-\(index)"
            _ = inbox.receive(message)
        }
        #expect(inbox.notifications.count == IssuerAppInbox.capacity)
        #expect(inbox.notifications.first?.notification?.messageID == "m-3")
    }

    @Test func cardStateRefreshesTheAppsCardView() async throws {
        let view = IssuerAppView()
        let handler = IssuerAppNotificationHandler(view: view, logger: Support.logger())
        try await handler.handle(
            Self.message("CARD_STATE", body: .cardState(.init(tokenState: .suspended, reasonCode: "LOST_CARD"))))
        #expect(view.snapshot.rows["DNITHE1"] == .init(tokenState: .suspended, updatedBy: "CARD_STATE", removed: false))
        try await handler.handle(Self.message("CARD_STATE", body: .cardState(.init(tokenState: .deactivated))))
        #expect(view.snapshot.rows["DNITHE1"]?.removed == true)
        #expect(handler.snapshot.notifications.count == 2)
    }

    /// A restarted issuer app finds its notifications, its pending and answered AUTHN requests and its renewed card
    /// ids again (the subscriber will not deliver a handled message twice), and a redelivery is not kept twice.
    @Test func theInboxSurvivesARestartOfTheApp() async throws {
        let store = try Support.store()
        let first = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), store: store)
        var authn = Self.message(
            "AUTHN", body: .authn(.init(authnRequestID: "ar-1", amountMinor: 1250, currency: "EUR", merchant: "Cafe")),
            sender: "TNS")
        authn.messageID = "m-1"
        var other = Self.message("AUTHN", body: .authn(.init(authnRequestID: "ar-2")), sender: "TNS")
        other.messageID = "m-2"
        var renewal = Self.message(
            "CARD_RENEWAL", body: .cardRenewal(.init(previousCardID: "c-1", newCardID: "c-2", panLast4: "0054")))
        renewal.messageID = "m-3"
        for message in [authn, other, renewal] { try await first.handle(message) }
        try first.answered("ar-1", status: "PROCEEDED")
        try await first.handle(authn)  // a redelivery
        #expect(first.snapshot.notifications.count == 3)

        let restarted = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), store: store)
        #expect(restarted.snapshot == first.snapshot)
        #expect(restarted.snapshot.authnRequests.map(\.status) == ["PROCEEDED", "PENDING"])
        #expect(throws: IssuerAppInbox.AnswerRefusal.alreadyAnswered("ar-1", status: "PROCEEDED")) {
            try restarted.pendingAuthn("ar-1")
        }
        #expect(restarted.snapshot.cardIdentities["DNITHE1"]?.cardID == "c-2")
    }
}
