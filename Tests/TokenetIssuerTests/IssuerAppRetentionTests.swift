import Foundation
import Synchronization
import Testing
import TokenetCard
import TokenetNode
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetIssuer

/// What the issuer app keeps, and for how long: ended authentication requests for their retention, one card id per
/// live digital card, app-to-app sessions while they can be used. Neither its memory nor its database grows with
/// every payment.
@Suite struct IssuerRetentionTests {
    static let minute: UInt64 = 60_000
    static let retention = IssuerRetention(keep: .seconds(3600))

    @Test func aRequestEndsAtItsAnswerOrItsExpiry() {
        #expect(IssuerRetention.endsAtMs(expiresAtMs: 9_000, receivedAtMs: 1_000) == 9_000)
        #expect(
            IssuerRetention.endsAtMs(expiresAtMs: 0, receivedAtMs: 1_000)
                == 1_000 + IssuerRetention.defaultLifetimeMs)
        #expect(IssuerRetention.endsAtMs(9_000, answeredAtMs: 4_000) == 4_000)
        #expect(IssuerRetention.endsAtMs(9_000, answeredAtMs: 12_000) == 9_000)
    }

    @Test func anEndedRequestIsPrunedOnceItsRetentionHasRunOut() {
        let hour = 60 * Self.minute
        #expect(Self.retention.cutoffMs(nowMs: hour - 1) == nil)
        #expect(Self.retention.cutoffMs(nowMs: hour + 5) == 5)
        #expect(!Self.retention.prunes(endsAtMs: 0, nowMs: hour - 1))
        #expect(Self.retention.prunes(endsAtMs: 5, nowMs: hour + 5))
        #expect(!Self.retention.prunes(endsAtMs: 6, nowMs: hour + 5))
        // A pending request is never pruned before its expiry has passed by the retention.
        #expect(!Self.retention.prunes(endsAtMs: 10 * hour, nowMs: 10 * hour + hour - 1))
        #expect(IssuerRetention().keepMs == 7 * 24 * hour)
        #expect(IssuerRetention().sweepInterval == .seconds(3600))
        #expect(IssuerRetention(keep: .seconds(30)).sweepInterval == .seconds(30))
        #expect(IssuerRetention(keep: .milliseconds(1)).sweepInterval == .seconds(1))
    }

    static func authn(_ id: String, expiresAtMs: UInt64 = 0) -> TspV1.Notification {
        var message = IssuerAppInboxTests.message(
            "AUTHN",
            body: .authn(.init(authnRequestID: id, amountMinor: 100, currency: "USD", expiresAtMs: expiresAtMs)),
            sender: "TNS")
        message.messageID = "m-\(id)"
        return message
    }

    static func renewal(_ digitalCardID: String, to cardID: String, messageID: String) -> TspV1.Notification {
        var message = IssuerAppInboxTests.message(
            "CARD_RENEWAL", body: .cardRenewal(.init(previousCardID: "c-0", newCardID: cardID, panLast4: "0054")),
            cardID: digitalCardID)
        message.messageID = messageID
        return message
    }

    static func deleted(_ digitalCardID: String, messageID: String) -> TspV1.Notification {
        var message = IssuerAppInboxTests.message(
            "CARD_STATE", body: .cardState(.init(tokenState: .deactivated)), cardID: digitalCardID)
        message.messageID = messageID
        return message
    }

    /// The pure inbox forgets an answered request once the retention has passed its answer, and a pending one once
    /// it has passed its expiry; the others stay, in order.
    @Test func theInboxForgetsEndedRequests() {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(Self.authn("answered", expiresAtMs: 50 * Self.minute), nowMs: 0)
        _ = inbox.receive(Self.authn("expired", expiresAtMs: 5 * Self.minute), nowMs: 0)
        _ = inbox.receive(Self.authn("pending", expiresAtMs: 100 * Self.minute), nowMs: 0)
        _ = inbox.receive(Self.authn("late-answer", expiresAtMs: 100 * Self.minute), nowMs: 0)
        inbox.answered("answered", status: "PROCEEDED", nowMs: 1 * Self.minute)
        inbox.answered("late-answer", status: "CANCELLED", nowMs: 90 * Self.minute)

        #expect(inbox.prune(nowMs: 60 * Self.minute, retention: Self.retention).isEmpty)
        #expect(inbox.prune(nowMs: 61 * Self.minute, retention: Self.retention) == ["answered"])
        #expect(inbox.prune(nowMs: 65 * Self.minute, retention: Self.retention) == ["expired"])
        #expect(inbox.authnRequests.map(\.authnRequestID) == ["pending", "late-answer"])
        #expect(inbox.prune(nowMs: 150 * Self.minute, retention: Self.retention) == ["late-answer"])
        #expect(inbox.prune(nowMs: 160 * Self.minute, retention: Self.retention) == ["pending"])
        #expect(inbox.authn.isEmpty)
        // A forgotten request is unknown to an answer.
        #expect(throws: IssuerAppInbox.AnswerRefusal.unknown("pending")) {
            try inbox.pendingAuthn("pending", nowMs: 160 * Self.minute)
        }
    }

    /// An unanswered request is PENDING until its expiry and EXPIRED from then on (the TSP refuses an answer at its
    /// expiry); an answer keeps its status whenever it is read.
    @Test func anUnansweredRequestExpiresAtItsEnd() throws {
        let kept = IssuerAppInbox.asked(.init(authnRequestID: "ar-1", expiresAtMs: 10_000), row: 1, nowMs: 1_000)
        #expect(IssuerAppInbox.status(of: kept, nowMs: 9_999) == "PENDING")
        #expect(IssuerAppInbox.status(of: kept, nowMs: 10_000) == "EXPIRED")
        var answered = kept
        answered.request.status = "CANCELLED"
        answered.endsAtMs = 4_000
        #expect(IssuerAppInbox.status(of: answered, nowMs: 20_000) == "CANCELLED")

        var inbox = IssuerAppInbox()
        _ = inbox.receive(Self.authn("ar-1", expiresAtMs: 10_000), nowMs: 1_000)
        _ = inbox.receive(Self.authn("ar-2"), nowMs: 1_000)
        #expect(try inbox.pendingAuthn("ar-1", nowMs: 9_999).authnRequestID == "ar-1")
        #expect(throws: IssuerAppInbox.AnswerRefusal.expired("ar-1", endsAtMs: 10_000)) {
            try inbox.pendingAuthn("ar-1", nowMs: 10_000)
        }
        // Without an expiry in its AUTHN, a request lives the TSP's lifetime from its receipt.
        let defaultEnd = 1_000 + IssuerRetention.defaultLifetimeMs
        #expect(inbox.authnRequests(nowMs: defaultEnd - 1).map(\.status) == ["EXPIRED", "PENDING"])
        #expect(inbox.authnRequests(nowMs: defaultEnd).map(\.status) == ["EXPIRED", "EXPIRED"])
        let page = try inbox.page(PageRequest(size: 0, token: "", call: "Notifications"), nowMs: 10_000)
        #expect(page.authnRequests.map(\.status) == ["EXPIRED", "PENDING"])
    }

    /// An AUTHN arriving at or after its expiry asks nothing; one arriving before it does. Without an expiry, the
    /// TSP's lifetime counts from its publication (from its arrival when the broker did not say).
    @Test func anAuthnArrivingAfterItsExpiryAsksNothing() {
        let late = Self.authn("ar-late", expiresAtMs: 10_000)
        let body = TspV1.AuthnBody(authnRequestID: "ar-late", amountMinor: 100, currency: "USD", expiresAtMs: 10_000)
        var inbox = IssuerAppInbox()
        #expect(inbox.receive(late, nowMs: 10_000) == .dropLateAuthn(body))
        #expect(inbox.authn.isEmpty)
        // Answering it is refused for its lateness, not as a request the app never heard of.
        #expect(throws: IssuerAppInbox.AnswerRefusal.arrivedLate("ar-late", expiresAtMs: 10_000)) {
            try inbox.pendingAuthn("ar-late", nowMs: 10_001)
        }
        #expect(throws: IssuerAppInbox.AnswerRefusal.unknown("ar-other")) {
            try inbox.pendingAuthn("ar-other", nowMs: 10_001)
        }
        #expect(inbox.receive(late, nowMs: 9_999) == .askCardholder(body))
        #expect(inbox.authnRequests.map(\.authnRequestID) == ["ar-late"])

        var unexpiring = Self.authn("ar-none")
        unexpiring.publishedAtMs = 1_000
        let lifetime = IssuerRetention.defaultLifetimeMs
        #expect(IssuerAppInbox.expiredOnArrival(.init(), unexpiring, arrivedAtMs: 1_000 + lifetime))
        #expect(!IssuerAppInbox.expiredOnArrival(.init(), unexpiring, arrivedAtMs: 1_000 + lifetime - 1))
        unexpiring.publishedAtMs = 0
        #expect(!IssuerAppInbox.expiredOnArrival(.init(), unexpiring, arrivedAtMs: 1_000 + lifetime))
        // A message read again from an older database was asked when it arrived: importing it drops nothing.
        var imported = IssuerAppInbox()
        #expect(imported.receive(late, nowMs: 20_000, arriving: false) == .askCardholder(body))
    }

    /// Only CARD_STATE DEACTIVATED of a named token tells the issuer a token is deleted.
    @Test func aDeactivatedCardStateNamesADeletedToken() {
        typealias Action = IssuerAppInbox.Action
        #expect(Action.refreshCardState(cardID: "DC-1", state: .deactivated).deletedToken == "DC-1")
        #expect(Action.refreshCardState(cardID: "DC-1", state: .suspended).deletedToken == nil)
        #expect(Action.refreshCardState(cardID: "", state: .deactivated).deletedToken == nil)
        #expect(Action.noteReplenishment(cardID: "DC-1", keysIssued: 0).deletedToken == nil)
        var inbox = IssuerAppInbox()
        #expect(inbox.receive(Self.deleted("DC-2", messageID: "d2")).deletedToken == "DC-2")
    }

    /// A renewal replaces its token's card id; a deleted token's card id is forgotten.
    @Test func theInboxKeepsOneCardIDPerLiveToken() {
        var inbox = IssuerAppInbox()
        _ = inbox.receive(Self.renewal("DC-1", to: "c-1b", messageID: "r1"))
        _ = inbox.receive(Self.renewal("DC-1", to: "c-1c", messageID: "r2"))
        _ = inbox.receive(Self.renewal("DC-2", to: "c-2b", messageID: "r3"))
        #expect(inbox.cardIdentities.mapValues(\.cardID) == ["DC-1": "c-1c", "DC-2": "c-2b"])
        _ = inbox.receive(Self.deleted("DC-1", messageID: "d1"))
        #expect(inbox.cardIdentities.mapValues(\.cardID) == ["DC-2": "c-2b"])
    }
}

/// A clock the tests move.
final class ManualClock: Sendable {
    private let date: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { date = Mutex(start) }

    var now: @Sendable () -> Date { { self.date.withLock { $0 } } }

    func advance(_ seconds: TimeInterval) { date.withLock { $0 += seconds } }
}

/// The app's store and its running inbox together.
@Suite struct IssuerAppRetentionStoreTests {
    static let retention = IssuerRetention(keep: .seconds(3600))

    static func handler(_ store: IssuerStore, _ clock: ManualClock) throws -> IssuerAppNotificationHandler {
        try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(), store: store, retention: retention, now: clock.now)
    }

    static func hasTable(_ database: Database, _ table: String) throws -> Bool {
        try database.queryOne("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table]) != nil
    }

    static func count(_ store: IssuerStore, _ table: String) throws -> Int {
        try #require(try store.database.queryOne("SELECT count(*) FROM \(table)")).int(0)
    }

    /// Many old requests (answered, or never answered and expired) are pruned at a sweep, in the store and in the
    /// running app; recent and still pending ones stay, listed in order, and a restart finds the same.
    @Test func oldRequestsArePrunedAndRecentOnesListed() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let handler = try Self.handler(store, clock)
        for index in 1...300 {
            try await handler.handle(IssuerRetentionTests.authn("old-\(index)"))
            if index % 2 == 0 { try handler.answered("old-\(index)", status: "PROCEEDED") }
        }
        clock.advance(2 * 3600)
        for index in 1...3 { try await handler.handle(IssuerRetentionTests.authn("new-\(index)")) }
        try handler.answered("new-1", status: "CANCELLED")
        #expect(try Self.count(store, "app_authn_requests") == 303)
        #expect(handler.snapshot.authn.count == 303)

        #expect(try handler.prune() == 300)
        let expected = ["new-1 CANCELLED", "new-2 PENDING", "new-3 PENDING"]
        #expect(handler.snapshot.authnRequests.map { "\($0.authnRequestID) \($0.status)" } == expected)
        #expect(try store.appAuthnRequests().map { "\($0.request.authnRequestID) \($0.request.status)" } == expected)
        #expect(try Self.count(store, "app_authn_requests") == 3)
        #expect(try handler.prune() == 0)

        // Every page of the listing: the newest 500 messages, then the requests kept.
        var request = IssuerV1.AppNotificationsRequest(pageSize: 7)
        var authn: [String] = []
        var notifications = 0
        repeat {
            let page = try await IssuerAppInboxListingTests.client(handler).notifications(request)
            authn += page.authnRequests.map(\.authnRequestID)
            notifications += page.notifications.count
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        #expect(notifications == 303)
        #expect(authn == ["new-1", "new-2", "new-3"])

        let restarted = try Self.handler(store, clock)
        #expect(restarted.snapshot == handler.snapshot)
        #expect(throws: IssuerAppInbox.AnswerRefusal.alreadyAnswered("new-1", status: "CANCELLED")) {
            try restarted.pendingAuthn("new-1")
        }
    }

    /// A restart after the retention has run out prunes at start.
    @Test func aRestartPrunesWhatEndedWhileTheNodeWasDown() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let first = try Self.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-1"))
        try first.answered("ar-1", status: "PROCEEDED")
        try await first.handle(IssuerRetentionTests.authn("ar-2"))
        clock.advance(3600 + 1)
        let restarted = try Self.handler(store, clock)
        #expect(restarted.snapshot.authnRequests.map(\.authnRequestID) == ["ar-2"])
        #expect(try Self.count(store, "app_authn_requests") == 1)
        // The messages stay listed: they have their own bound (the newest 500).
        #expect(restarted.snapshot.notifications.count == 2)
    }

    /// Requests are kept apart from the messages: one whose message left the newest 500 is still listed, also after
    /// a restart, until its retention runs out.
    @Test func aRequestOutlivesItsMessageUntilItsRetention() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let handler = try Self.handler(store, clock)
        try await handler.handle(IssuerRetentionTests.authn("ar-1"))
        for index in 0..<IssuerAppInbox.capacity {
            var message = IssuerAppInboxTests.message("UNKNOWN", body: nil)
            message.messageID = "u-\(index)"
            try await handler.handle(message)
        }
        #expect(try Self.count(store, "app_inbox") == IssuerAppInbox.capacity)
        let restarted = try Self.handler(store, clock)
        #expect(restarted.snapshot.authnRequests.map(\.authnRequestID) == ["ar-1"])
        #expect(try restarted.pendingAuthn("ar-1").status == "PENDING")
    }

    /// A very late redelivery of an AUTHN whose request was pruned (its message id has left the newest 500, so it is
    /// not known as a redelivery) makes no request again: it arrived after its expiry, so it is neither listed
    /// PENDING nor listed with an outcome the app no longer knows (this one was answered), an answer is refused as
    /// for an unknown request, and a log line says why. Without an expiry in its AUTHN, the TSP's lifetime counts
    /// from its publication.
    @Test func aLateRedeliveryOfAPrunedRequestIsNotAskedAgain() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let sink = MemoryLogSink()
        let handler = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(sink), store: store, retention: Self.retention,
            now: clock.now)
        let sentAtMs = UInt64(clock.now().timeIntervalSince1970 * 1000)
        var answered = IssuerRetentionTests.authn("ar-answered", expiresAtMs: sentAtMs + 60_000)
        var unexpiring = IssuerRetentionTests.authn("ar-no-expiry")
        answered.publishedAtMs = sentAtMs
        unexpiring.publishedAtMs = sentAtMs
        try await handler.handle(answered)
        try await handler.handle(unexpiring)
        try handler.answered("ar-answered", status: "PROCEEDED")
        clock.advance(2 * 3600)
        #expect(try handler.prune() == 2)
        for index in 0..<IssuerAppInbox.capacity {
            var message = IssuerAppInboxTests.message("UNKNOWN", body: nil)
            message.messageID = "u-\(index)"
            try await handler.handle(message)
        }

        for var message in [answered, unexpiring] {
            message.deliveryAttempt = 2
            try await handler.handle(message)
        }
        #expect(handler.snapshot.authn.isEmpty)
        #expect(try store.appAuthnRequests().isEmpty)
        let listed = try await IssuerAppInboxListingTests.client(handler).notifications(.init())
        #expect(listed.authnRequests.isEmpty)
        #expect(listed.notifications.suffix(2).allSatisfy { $0.action.contains("arrived after its expiry") })
        #expect(throws: IssuerAppInbox.AnswerRefusal.arrivedLate("ar-no-expiry", expiresAtMs: 0)) {
            try handler.pendingAuthn("ar-no-expiry")
        }
        for id in ["ar-answered", "ar-no-expiry"] {
            #expect(sink.lines.contains { $0.contains("arrived after its expiry") && $0.contains(id) })
        }
    }

    /// The in-memory inbox (no store) does not keep requests past their retention either.
    @Test func anInboxInMemoryForgetsEndedRequests() async throws {
        let clock = ManualClock()
        let handler = IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(), retention: Self.retention, now: clock.now)
        for index in 1...50 {
            try await handler.handle(IssuerRetentionTests.authn("ar-\(index)"))
            try handler.answered("ar-\(index)", status: "PROCEEDED")
        }
        clock.advance(3600)
        #expect(try handler.prune() == 50)
        #expect(handler.snapshot.authn.isEmpty)
    }

    /// One card id per digital card in the store: a renewal replaces it, a deleted token's goes, a restart reads
    /// the same, also once the renewal's message has left the newest 500.
    @Test func cardIDsAreReplacedAndForgottenWithTheirToken() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let handler = try Self.handler(store, clock)
        for round in 1...20 {
            for card in 1...5 {
                try await handler.handle(
                    IssuerRetentionTests.renewal(
                        "DC-\(card)", to: "c-\(card)-\(round)", messageID: "r\(round)-\(card)"))
            }
        }
        try await handler.handle(IssuerRetentionTests.deleted("DC-2", messageID: "d2"))
        let expected = ["DC-1": "c-1-20", "DC-3": "c-3-20", "DC-4": "c-4-20", "DC-5": "c-5-20"]
        #expect(try Self.count(store, "app_card_ids") == 4)
        #expect(handler.snapshot.cardIdentities.mapValues(\.cardID) == expected)
        for index in 0..<IssuerAppInbox.capacity {
            var message = IssuerAppInboxTests.message("UNKNOWN", body: nil)
            message.messageID = "u-\(index)"
            try await handler.handle(message)
        }
        #expect(try Self.handler(store, clock).snapshot.cardIdentities.mapValues(\.cardID) == expected)
    }

    /// A delete the issuer learned without its CARD_STATE DEACTIVATED message (the check with the TSP, after the
    /// broker's retention dropped the message) drops the token's card id too: from the running app's listing, and
    /// from what a restart finds. A card id a database kept for a token recorded deleted before is not listed either.
    @Test func aDeleteLearnedWithoutItsMessageDropsTheCardID() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let handler = try Self.handler(store, clock)
        for card in 1...3 {
            try await handler.handle(
                IssuerRetentionTests.renewal("DC-\(card)", to: "c-\(card)", messageID: "r-\(card)"))
        }
        #expect(try store.recordDeletedTokens(["DC-2"]) == ["DC-2"])
        let listed = try handler.page(PageRequest(size: 0, token: "", call: "AppNotifications")).cardIds
        #expect(listed.map(\.digitalCardID) == ["DC-1", "DC-3"])
        #expect(try Self.count(store, "app_card_ids") == 2)
        #expect(try Self.handler(store, clock).snapshot.cardIdentities.keys.sorted() == ["DC-1", "DC-3"])

        // A renewal's message that comes after the delete brings no card id back.
        try await handler.handle(IssuerRetentionTests.renewal("DC-2", to: "c-2b", messageID: "r-2b"))
        #expect(handler.snapshot.cardIdentities.keys.sorted() == ["DC-1", "DC-3"])
        #expect(try Self.count(store, "app_card_ids") == 2)

        // Kept by an earlier build, which recorded the delete and left the card id: forgotten at the start.
        try store.database.execute(
            "INSERT INTO app_card_ids (digital_card_id, card_id, pan_last4, expiry) VALUES ('DC-2', 'c-2', '0054', '')")
        #expect(try Self.handler(store, clock).snapshot.cardIdentities.keys.sorted() == ["DC-1", "DC-3"])
        #expect(try Self.count(store, "app_card_ids") == 2)
    }

    /// A database from before the requests and card ids were kept apart (schema 10) has them only in its messages
    /// and answers: the first start derives them once, answered requests taken to have ended then.
    @Test func anOlderDatabaseIsImportedOnce() async throws {
        let database = try Database.openInMemory()
        try Migrator(IssuerStore.migrations.filter { $0.version < 10 }).migrate(database)
        for (row, message) in [
            IssuerRetentionTests.authn("ar-1"), IssuerRetentionTests.authn("ar-2"),
            IssuerRetentionTests.renewal("DC-1", to: "c-1b", messageID: "r1"),
        ].enumerated() {
            try database.execute(
                "INSERT INTO app_inbox (id, message_id, notification) VALUES (?, ?, ?)",
                [Int64(row + 1), message.messageID, try message.serializedBytes()])
        }
        try database.execute("INSERT INTO app_authn_answers (authn_request_id, status) VALUES ('ar-1', 'PROCEEDED')")
        let store = try IssuerStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        let clock = ManualClock()
        let handler = try Self.handler(store, clock)
        #expect(
            handler.snapshot.authnRequests.map { "\($0.authnRequestID) \($0.status)" } == [
                "ar-1 PROCEEDED", "ar-2 PENDING",
            ])
        #expect(handler.snapshot.cardIdentities["DC-1"]?.cardID == "c-1b")
        #expect(try !Self.hasTable(store.database, "app_authn_answers"))
        #expect(try Self.count(store, "app_inbox_imports") == 0)

        clock.advance(3600 + 5 * 60)
        try handler.prune()
        // Not imported again from the messages still kept.
        #expect(try Self.handler(store, clock).snapshot.authn.isEmpty)
    }

    /// A database from before `deleted_tokens` (schema 9) learned of deleted tokens only through its app's kept
    /// messages: the first start records the tokens their CARD_STATE DEACTIVATED names (learned when published), once,
    /// so that renewals and card-wide token changes skip them; another state records nothing.
    @Test func tokensDeletedBeforeTheyWereRecordedAreBackFilled() async throws {
        let database = try Database.openInMemory()
        try Migrator(IssuerStore.migrations.filter { $0.version < 9 }).migrate(database)
        var deleted = IssuerRetentionTests.deleted("DC-1", messageID: "d1")
        deleted.publishedAtMs = 1_700_000_000_000
        var suspended = IssuerAppInboxTests.message(
            "CARD_STATE", body: .cardState(.init(tokenState: .suspended)), cardID: "DC-2")
        suspended.messageID = "s2"
        for (row, message) in [deleted, suspended, IssuerRetentionTests.authn("ar-1")].enumerated() {
            try database.execute(
                "INSERT INTO app_inbox (id, message_id, notification) VALUES (?, ?, ?)",
                [Int64(row + 1), message.messageID, try message.serializedBytes()])
        }
        let store = try IssuerStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        _ = try Self.handler(store, ManualClock())
        #expect(try store.goneTokens(["DC-1", "DC-2"]) == ["DC-1": .deleted(sinceMs: 1_700_000_000_000)])
        #expect(try Self.count(store, "deleted_tokens_backfills") == 0)

        // Once: a later start reads the kept messages for nothing more.
        try store.database.execute("DELETE FROM deleted_tokens")
        _ = try Self.handler(store, ManualClock())
        #expect(try Self.count(store, "deleted_tokens") == 0)
    }

    /// Schema 11 drops `app_authn_answers`, which only the import read: a database at schema 10 whose import has not
    /// run yet keeps its answers for it (in the import's row), and one imported already just loses the empty table.
    @Test func theAnswersTableGoesAndAPendingImportKeepsItsAnswers() async throws {
        for importDone in [false, true] {
            let database = try Database.openInMemory()
            try Migrator(IssuerStore.migrations.filter { $0.version < 11 }).migrate(database)
            let message = IssuerRetentionTests.authn("ar-1")
            try database.execute(
                "INSERT INTO app_inbox (id, message_id, notification) VALUES (1, ?, ?)",
                [message.messageID, try message.serializedBytes()])
            if importDone {
                try database.execute("DELETE FROM app_inbox_imports")
                try database.execute(
                    """
                    INSERT INTO app_authn_requests (authn_request_id, inbox_row, amount_minor, currency, merchant,
                        status, ends_at_ms)
                    VALUES ('ar-1', 1, 100, 'USD', '', 'CANCELLED', 1800000000000)
                    """)
            } else {
                for (id, status) in [("ar-1", "PROCEEDED"), ("ar-9", "CANCELLED")] {
                    try database.execute(
                        "INSERT INTO app_authn_answers (authn_request_id, status) VALUES (?, ?)", [id, status])
                }
            }
            let store = try IssuerStore(
                database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
            #expect(try !Self.hasTable(database, "app_authn_answers"))
            let handler = try Self.handler(store, ManualClock())
            #expect(
                handler.snapshot.authnRequests.map { "\($0.authnRequestID) \($0.status)" }
                    == [importDone ? "ar-1 CANCELLED" : "ar-1 PROCEEDED"])
            #expect(try Self.count(store, "app_inbox_imports") == 0)
        }
    }
}
