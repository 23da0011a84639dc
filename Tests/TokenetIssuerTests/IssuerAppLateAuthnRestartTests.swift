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

        let older = IssuerAppInbox(
            restoring: [.init(notification: late, row: 1, arrivedAtMs: nil)], authn: [], cardIdentities: [])
        #expect(older.notifications.first?.action.contains("proceed or cancel") == true)
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
        #expect(throws: IssuerAppInbox.AnswerRefusal.unknown("ar-late")) { try restarted.pendingAuthn("ar-late") }
    }

    /// Schema 16 adds the arrival to a database's kept messages; those kept before have none and are listed as
    /// they were (asked), and a message kept afterwards has its own.
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
        #expect(handler.snapshot.notifications.map(\.action).first?.contains("proceed or cancel") == true)
        try await handler.handle(IssuerRetentionTests.authn("ar-new", expiresAtMs: 1))
        let nowMs = UInt64(clock.now().timeIntervalSince1970 * 1000)
        #expect(try store.appNotifications().map(\.arrivedAtMs) == [nil, nowMs])
    }
}
