import Foundation
import Testing
import TokenetStorage
import TokenetWire

@testable import TokenetIssuer

/// An authentication request the cardholder answered while the TSP's reply to the app was lost: the payment's
/// TRANSACTION_NOTIFICATION says how it ended, and the app lists the request so instead of PENDING and then
/// EXPIRED beside an approved payment.
@Suite struct IssuerAppSettledAuthnTests {
    static func payment(_ authnRequestID: String, status: String, approved: Bool, id: String) -> TspV1.Notification {
        var message = IssuerAppInboxTests.message(
            "TRANSACTION_NOTIFICATION",
            body: .transaction(
                .init(
                    transactionID: "txn-\(id)", amountMinor: 100, currency: "USD", merchant: "Kiosk",
                    approved: approved, transactionAtMs: 5, authnStatus: status, authnRequestID: authnRequestID)),
            sender: "TNS")
        message.messageID = "m-\(id)"
        return message
    }

    @Test func aPaymentsNotificationSettlesItsPendingRequest() {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(IssuerRetentionTests.authn("ar-1"), nowMs: 1)
        _ = inbox.receive(IssuerRetentionTests.authn("ar-2"), nowMs: 1)
        _ = inbox.receive(Self.payment("ar-1", status: "PROCEEDED", approved: true, id: "1"), nowMs: 2)
        _ = inbox.receive(Self.payment("ar-2", status: "CANCELLED", approved: false, id: "2"), nowMs: 2)
        #expect(inbox.authnRequests.map(\.status) == ["PROCEEDED", "CANCELLED"])
        // The messages that asked stop inviting an answer.
        #expect(inbox.notifications.filter { $0.action.contains("proceed or cancel") }.isEmpty)
        #expect(throws: IssuerAppInbox.AnswerRefusal.alreadyAnswered("ar-1", status: "PROCEEDED")) {
            try inbox.pendingAuthn("ar-1", nowMs: 3)
        }
    }

    /// An expiry is left to the request's own; a payment that asked nothing, or names a request the app never kept,
    /// changes no request; an answer the app recorded stands.
    @Test func onlyAnAnswerOfAPendingRequestIsTaken() {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(IssuerRetentionTests.authn("ar-1", expiresAtMs: 1_000), nowMs: 1)
        _ = inbox.receive(IssuerRetentionTests.authn("ar-2"), nowMs: 1)
        inbox.answered("ar-2", status: "CANCELLED", nowMs: 2)
        _ = inbox.receive(Self.payment("ar-1", status: "EXPIRED", approved: false, id: "1"), nowMs: 3)
        _ = inbox.receive(Self.payment("", status: "", approved: true, id: "2"), nowMs: 3)
        _ = inbox.receive(Self.payment("ar-9", status: "PROCEEDED", approved: true, id: "3"), nowMs: 3)
        _ = inbox.receive(Self.payment("ar-2", status: "PROCEEDED", approved: true, id: "4"), nowMs: 3)
        #expect(inbox.authnRequests.map(\.status) == ["PENDING", "CANCELLED"])
        #expect(inbox.authnRequests(nowMs: 1_000).map(\.status) == ["EXPIRED", "CANCELLED"])
    }

    /// The answer is stored with the message that brought it: a restart lists the request answered too.
    @Test func theSettledAnswerOutlivesARestart() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let first = try IssuerAppRetentionStoreTests.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-1"))
        try await first.handle(Self.payment("ar-1", status: "PROCEEDED", approved: true, id: "1"))
        let restarted = try IssuerAppRetentionStoreTests.handler(store, clock)
        for handler in [first, restarted] {
            #expect(handler.snapshot.authnRequests.map(\.status) == ["PROCEEDED"])
        }
        #expect(restarted.snapshot == first.snapshot)
    }
}
