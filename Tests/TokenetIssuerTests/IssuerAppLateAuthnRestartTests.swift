import Foundation
import Testing
import TokenetCard
import TokenetStorage
import TokenetWire

@testable import TokenetIssuer

/// An AUTHN dropped as late (`IssuerAppInbox.Action.dropLateAuthn`) is listed the same way after a restart: the app
/// keeps when each message arrived, which decides it, so the restored message does not invite an answer to a
/// request that was never made.
@Suite struct IssuerAppLateAuthnRestartTests {
    /// Restored with its arrival, a message has the action it had; without one (kept before arrivals were recorded)
    /// its AUTHN is taken as asked, as the app did then.
    @Test func aRestoredMessageKeepsTheActionItsArrivalGaveIt() {
        let late = IssuerRetentionTests.authn("ar-late", expiresAtMs: 10_000)
        var live = IssuerAppInbox()
        _ = live.receive(late, row: 1, nowMs: 10_000)
        let restored = IssuerAppInbox(
            restoring: [.init(notification: late, row: 1, arrivedAtMs: 10_000)], authn: [], cardIdentities: [])
        #expect(restored.notifications == live.notifications)
        #expect(restored.notifications.first?.action.contains("arrived after its expiry: not asked") == true)

        guard case .authn(let body)? = late.body else {
            Issue.record("not an AUTHN: \(late)")
            return
        }
        let older = IssuerAppInbox(
            restoring: [.init(notification: late, row: 1, arrivedAtMs: nil)],
            authn: [IssuerAppInbox.asked(body, row: 1, nowMs: 0)], cardIdentities: [])
        #expect(older.notifications.first?.action.contains("proceed or cancel") == true)
        // Its request since pruned, it was asked and nothing can answer it any more.
        let pruned = IssuerAppInbox(
            restoring: [.init(notification: late, row: 1, arrivedAtMs: nil)], authn: [], cardIdentities: [])
        #expect(pruned.notifications.first?.action.contains("was asked and has ended") == true)
    }

    /// An AUTHN whose request was pruned (its retention ran out) says so, in the running app and after a restart,
    /// instead of inviting an answer that would be refused as unknown; one still kept is still asked.
    @Test func anAuthnWhosRequestWasPrunedIsListedEnded() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let first = try IssuerAppRetentionStoreTests.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-1"))
        try first.answered("ar-1", status: "PROCEEDED")
        try await first.handle(IssuerRetentionTests.authn("ar-2"))
        clock.advance(3600 + 1)
        #expect(try first.prune() == 1)
        let restarted = try IssuerAppRetentionStoreTests.handler(store, clock)
        for handler in [first, restarted] {
            let actions = handler.snapshot.notifications.map(\.action)
            #expect(actions.count == 2)
            #expect(
                actions.first
                    == "authentication request ar-1 (1.00 USD at ) was asked and has ended; no longer kept, so there "
                    + "is nothing to answer")
            #expect(actions.last?.contains("request ar-2: proceed or cancel") == true, "\(actions)")
            #expect(throws: IssuerAppInbox.AnswerRefusal.unknown("ar-1")) { try handler.pendingAuthn("ar-1") }
        }
        #expect(restarted.snapshot == first.snapshot)
    }

    /// An answered AUTHN says how it ended, in the running app and after a restart: it went on inviting "proceed or
    /// cancel" beside its request listed PROCEEDED.
    @Test func anAnsweredAuthnSaysHowItEnded() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let first = try IssuerAppRetentionStoreTests.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-1"))
        try await first.handle(IssuerRetentionTests.authn("ar-2"))
        try first.answered("ar-1", status: "PROCEEDED")
        let restarted = try IssuerAppRetentionStoreTests.handler(store, clock)
        for handler in [first, restarted] {
            let actions = handler.snapshot.notifications.map(\.action)
            #expect(
                actions == [
                    "authenticate 1.00 USD at ? (request ar-1: PROCEEDED)",
                    "authenticate 1.00 USD at ? (request ar-2: proceed or cancel)",
                ], "\(actions)")
        }
        #expect(restarted.snapshot == first.snapshot)
    }

    /// Before and after a restart, a late AUTHN is listed "not asked" and an answer to it is refused as for an
    /// unknown request, while an AUTHN that arrived in time is still asked.
    @Test func aLateAuthnIsListedNotAskedAfterARestart() async throws {
        let store = try Support.store()
        let clock = ManualClock()
        let nowMs = UInt64(clock.now().timeIntervalSince1970 * 1000)
        let first = try IssuerAppRetentionStoreTests.handler(store, clock)
        try await first.handle(IssuerRetentionTests.authn("ar-late", expiresAtMs: nowMs - 1))
        try await first.handle(IssuerRetentionTests.authn("ar-asked", expiresAtMs: nowMs + 60_000))
        let before = first.snapshot.notifications.map(\.action)
        #expect(before[0].contains("arrived after its expiry: not asked"))
        #expect(before[1].contains("proceed or cancel"))

        let restarted = try IssuerAppRetentionStoreTests.handler(store, clock)
        #expect(restarted.snapshot.notifications.map(\.action) == before)
        let listed = try await IssuerAppInboxListingTests.client(restarted).notifications(.init())
        #expect(listed.notifications.map(\.action) == before)
        #expect(listed.authnRequests.map(\.authnRequestID) == ["ar-asked"])
        #expect(throws: IssuerAppInbox.AnswerRefusal.arrivedLate("ar-late", expiresAtMs: nowMs - 1)) {
            try restarted.pendingAuthn("ar-late")
        }
    }

    /// Schema 16 adds the arrival to a database's kept messages; those kept before have none and are listed as
    /// asked, as they were (this one's request, ended long ago, is pruned at start, so it says it ended), and a
    /// message kept afterwards has its own.
    @Test func messagesKeptBeforeArrivalsWereRecordedAreListedAsBefore() async throws {
        let database = try Database.openInMemory()
        try Migrator(IssuerStore.migrations.filter { $0.version < 16 }).migrate(database)
        let old = IssuerRetentionTests.authn("ar-old", expiresAtMs: 1)
        try database.execute(
            "INSERT INTO app_inbox (id, message_id, notification) VALUES (1, ?, ?)",
            [old.messageID, try old.serializedBytes()])
        let store = try IssuerStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        let clock = ManualClock()
        let handler = try IssuerAppRetentionStoreTests.handler(store, clock)
        #expect(handler.snapshot.notifications.map(\.action).first?.contains("was asked and has ended") == true)
        try await handler.handle(IssuerRetentionTests.authn("ar-new", expiresAtMs: 1))
        let nowMs = UInt64(clock.now().timeIntervalSince1970 * 1000)
        #expect(try store.appNotifications().map(\.arrivedAtMs) == [nil, nowMs])
    }
}
