import Foundation
import Testing
import TokenetCard
import TokenetStorage

@testable import TokenetIssuer

/// The issuer's strong-authentication enrolments (reference id → user and account, read only to activate with the
/// code) are kept until `IssuerRetention` after their activation code expired, then pruned with the app's ended
/// authentication requests: the table does not grow with every enrolment.
@Suite struct EnrolmentRetentionTests {
    static let hour: UInt64 = 3_600_000
    static let retention = IssuerRetention(keep: .seconds(3600))

    @Test func anEnrolmentEndsAtItsCodesExpiry() {
        #expect(
            IssuerRetention.enrolmentEndsAtMs(expiresAtMs: 5 * Self.hour, createdAtMs: Self.hour) == 5 * Self.hour)
        // Unknown expiry: the longest lifetime the TSP gives a code, so a code still usable is never pruned.
        #expect(
            IssuerRetention.enrolmentEndsAtMs(expiresAtMs: 0, createdAtMs: Self.hour)
                == Self.hour + 7 * 24 * Self.hour)
        #expect(!Self.retention.prunes(endsAtMs: 5 * Self.hour, nowMs: 6 * Self.hour - 1))
        #expect(Self.retention.prunes(endsAtMs: 5 * Self.hour, nowMs: 6 * Self.hour))
    }

    /// Only the enrolments that ended at or before the cutoff go, activated or not; the others stay readable.
    @Test func theStorePrunesEndedEnrolments() throws {
        let store = try Support.store()
        for (reference, expires) in [("ref-1", 2 * Self.hour), ("ref-2", 3 * Self.hour), ("ref-3", 0)] {
            try store.recordEnrolment(
                referenceID: reference, userID: "ch-alice", accountID: "acc-alice-checking", expiresAtMs: expires,
                nowMs: Self.hour)
        }
        #expect(try store.pruneEnrolments(endedAtOrBefore: 2 * Self.hour - 1) == 0)
        #expect(try store.pruneEnrolments(endedAtOrBefore: 2 * Self.hour) == 1)
        #expect(try store.enrolment(referenceID: "ref-1") == nil)
        #expect(try store.enrolment(referenceID: "ref-2")?.accountID == "acc-alice-checking")
        #expect(try store.pruneEnrolments(endedAtOrBefore: 100 * Self.hour) == 1)
        #expect(try store.enrolment(referenceID: "ref-3") != nil)
        let plan = try store.database.query(
            "EXPLAIN QUERY PLAN DELETE FROM enrolments WHERE ends_at_ms <= 1"
        ).map { try $0.text(3) }
        #expect(plan.contains { $0.contains("enrolments_by_end") })
    }

    /// Enrolments recorded before schema 12 knew no expiry: they end the longest code lifetime after they were made.
    @Test func olderEnrolmentsEndTheLongestLifetimeAfterTheyWereMade() throws {
        let database = try Database.openInMemory()
        try Migrator(IssuerStore.migrations.filter { $0.version < 12 }).migrate(database)
        try database.execute("INSERT INTO cardholders (id, name, phone, email) VALUES ('ch-1', 'A', '+1', 'a@x')")
        try database.execute("INSERT INTO accounts (id, cardholder_id) VALUES ('acc-1', 'ch-1')")
        try database.execute(
            "INSERT INTO enrolments (reference_id, user_id, account_id, created_at_ms) VALUES ('ref-1', 'ch-1', "
                + "'acc-1', \(Self.hour))")
        let store = try IssuerStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        let longest = IssuerRetention.longestActivationLifetimeMs
        #expect(try store.pruneEnrolments(endedAtOrBefore: Self.hour + longest - 1) == 0)
        #expect(try store.enrolment(referenceID: "ref-1")?.userID == "ch-1")
        #expect(try store.pruneEnrolments(endedAtOrBefore: Self.hour + longest) == 1)
    }

    /// The node's sweep (at start and then every hour) prunes an enrolment once the retention has passed its code's
    /// expiry; activating with its reference is then NOT_FOUND, without asking the TSP.
    @Test func theSweepPrunesAnEnrolmentOnceItsCodeExpiredLongEnough() async throws {
        let app = try IssuerAppAuthTests.App.make()
        let enrolled = try await app.enrol()
        // FakeTSPAuth's codes expire an hour after Support.now.
        let clock = ManualClock(Support.now.addingTimeInterval(3600 + 3600 - 1))
        let handler = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(), store: app.party.store, retention: Self.retention,
            now: clock.now)
        #expect(try app.party.store.enrolment(referenceID: enrolled.reference) != nil)
        clock.advance(1)
        try handler.prune()
        #expect(try app.party.store.enrolment(referenceID: enrolled.reference) == nil)
        await expectIssuerError(.notFound, "unknown to the issuer") {
            try await app.party.app.activate(
                code: enrolled.code, referenceID: enrolled.reference, displayName: "", pin: "2580")
        }
        #expect(app.tsp.state.withLock { $0.verifyCalls } == 0)
    }
}
