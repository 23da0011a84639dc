import Foundation
import Testing
import TokenetCard
import TokenetStorage
import TokenetWire

@testable import TokenetIssuer

/// The issuer's outbox (the simulated SMS and e-mails: one-time codes for ID&V, activation codes) keeps a message
/// until `outbox_retention_s` after it was sent and its code expired, then the node's sweep prunes it: the outbox
/// does not grow with every code, and a code still usable is never pruned.
@Suite struct OutboxRetentionTests {
    static let hour: UInt64 = 3_600_000
    static let retention = IssuerRetention(keep: .seconds(3600))

    static func message(_ number: Int, sentAtMs: UInt64) -> IssuerV1.OutboxMessage {
        IssuerV1.OutboxMessage(
            sentAtMs: sentAtMs, channel: "sms", maskedDestination: "+44 ••• ••• 0042", text: "message \(number)",
            digitalCardID: "DC-\(number % 3)")
    }

    @Test func aMessageEndsWhenItsCodeExpired() {
        #expect(
            IssuerRetention.outboxMessageEndsAtMs(codeExpiresAtMs: 3 * Self.hour, sentAtMs: Self.hour)
                == 3 * Self.hour)
        // A code that expired before the message was recorded: the message ends when it was sent.
        #expect(IssuerRetention.outboxMessageEndsAtMs(codeExpiresAtMs: 1, sentAtMs: Self.hour) == Self.hour)
        // Unknown expiry: the longest lifetime the TSP gives a code, so a code still usable is never pruned.
        #expect(
            IssuerRetention.outboxMessageEndsAtMs(codeExpiresAtMs: 0, sentAtMs: Self.hour)
                == Self.hour + 7 * 24 * Self.hour)
        #expect(!Self.retention.prunes(endsAtMs: 3 * Self.hour, nowMs: 4 * Self.hour - 1))
        #expect(Self.retention.prunes(endsAtMs: 3 * Self.hour, nowMs: 4 * Self.hour))
    }

    /// Many old messages go in one indexed DELETE; the recent ones, and one whose code is still valid, stay listed in
    /// the order they were sent.
    @Test func theStorePrunesOldMessagesThroughItsIndex() throws {
        let store = try Support.store()
        for number in 0..<300 {
            let sent = UInt64(number) * 1000
            try store.recordOutbox(Self.message(number, sentAtMs: sent), codeExpiresAtMs: sent + 600_000)
        }
        // Sent first, but its activation code lives long: kept until that code expired.
        try store.recordOutbox(Self.message(300, sentAtMs: 0), codeExpiresAtMs: 10 * Self.hour)
        try store.recordOutbox(Self.message(301, sentAtMs: 2 * Self.hour), codeExpiresAtMs: 2 * Self.hour + 600_000)
        // Codes of messages 0..<200 expired at or before 800 s.
        #expect(try store.pruneOutbox(endedAtOrBefore: 799_000) == 200)
        #expect(try store.outbox(digitalCardID: nil).map(\.text) == (200..<302).map { "message \($0)" })
        #expect(
            try store.outbox(digitalCardID: "DC-1").map(\.text)
                == (200..<302).filter { $0 % 3 == 1 }.map { "message \($0)" })
        #expect(try store.pruneOutbox(endedAtOrBefore: 9 * Self.hour) == 101)
        #expect(try store.outbox(digitalCardID: nil).map(\.text) == ["message 300"])
        let plan = try store.database.query(
            "EXPLAIN QUERY PLAN DELETE FROM outbox WHERE ends_at_ms <= 1"
        ).map { try $0.text(3) }
        #expect(plan.contains { $0.contains("outbox_by_end") })
    }

    /// Messages recorded before schema 13 knew no code expiry: they end the longest code lifetime after they were
    /// sent.
    @Test func olderMessagesEndTheLongestLifetimeAfterTheyWereSent() throws {
        let database = try Database.openInMemory()
        try Migrator(IssuerStore.migrations.filter { $0.version < 13 }).migrate(database)
        try database.execute(
            "INSERT INTO outbox (sent_at_ms, digital_card_id, channel, masked_destination, text) VALUES (\(Self.hour), "
                + "'DC-1', 'sms', '+1', 'old')")
        let store = try IssuerStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        let longest = IssuerRetention.longestActivationLifetimeMs
        #expect(try store.pruneOutbox(endedAtOrBefore: Self.hour + longest - 1) == 0)
        #expect(try store.outbox(digitalCardID: "DC-1").map(\.text) == ["old"])
        #expect(try store.pruneOutbox(endedAtOrBefore: Self.hour + longest) == 1)
    }

    /// The node's sweep prunes with the outbox's own retention, not the app's; it sweeps as often as the shorter one.
    @Test func theSweepPrunesTheOutboxWithItsOwnRetention() throws {
        let store = try Support.store()
        let sent = UInt64(Support.now.timeIntervalSince1970 * 1000)
        try store.recordOutbox(Self.message(1, sentAtMs: sent), codeExpiresAtMs: sent + 600_000)
        let clock = ManualClock(Support.now.addingTimeInterval(600 + 60 - 1))
        let handler = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(), store: store, retention: IssuerRetention(),
            outboxRetention: IssuerRetention(keep: .seconds(60)), now: clock.now)
        #expect(handler.sweepInterval == .seconds(60))
        #expect(try store.outbox(digitalCardID: nil).count == 1)
        clock.advance(1)
        try handler.prune()
        #expect(try store.outbox(digitalCardID: nil).isEmpty)
    }
}
