import Foundation
import Testing
import TokenetCard
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetTSP

/// The same-card rules on the TSP's storage: which tokens a new digitization replaces, which abandoned step-ups
/// expire, and the live-sibling check every activation goes through.
@Suite struct SameCardStoreTests {
    static let pan = "4111111111111111"
    /// Another card whose number ends in the same four digits.
    static let lookalike = "4000000000061111"

    struct Fixture {
        let database: Database
        let store: TSPStore

        init() throws {
            database = try Database.openInMemory()
            store = try TSPStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
            _ = try database.execute(
                "INSERT INTO issuers (id, name, encryption_key_pem, updated_at_ms) VALUES ('bank-a', 'Bank A', 'pem', 0)"
            )
        }

        /// A token of `pan` on device-1 in account-1, in `state`, decided at `atMs`; with `pending`, its
        /// digitization is still waiting for the issuer's decision.
        func token(
            _ id: String, pan: String = SameCardStoreTests.pan, state: TokenLifecycleStateMachine.State,
            atMs: Int64 = 0, pending: Bool = false, device: String = "device-1"
        ) throws {
            let sealed = try store.vault.seal(try PAN(pan), recordID: id)
            _ = try database.execute(
                """
                INSERT INTO tokens (digital_card_id, scheme, token_pan, token_last4, token_expiry, funding_pan,
                    pan_last4, issuer_id, wallet_account_id, device_id, state, created_at_ms, updated_at_ms)
                VALUES (?, 'visa', x'00', '9999', '12/30', ?, ?, 'bank-a', 'account-1', ?, ?, ?, ?)
                """, [id, sealed, String(pan.suffix(4)), device, state.rawValue, atMs, atMs])
            guard pending else { return }
            _ = try database.execute(
                """
                INSERT INTO eligibility_receipts (receipt, wallet_account_id, device_id, issuer_id, scheme, pan_last4,
                    card_data, input_method, created_at_ms, expires_at_ms, used_by_request_id)
                VALUES (?, 'account-1', ?, 'bank-a', 'visa', ?, x'00', 0, 0, 0, ?)
                """, ["receipt-\(id)", device, String(pan.suffix(4)), "request-\(id)"])
            _ = try database.execute(
                """
                INSERT INTO digitize_requests (request_id, receipt, digital_card_id, status, created_at_ms)
                VALUES (?, ?, ?, 'pending', 0)
                """, ["request-\(id)", "receipt-\(id)", id])
        }

        func state(_ id: String) throws -> String? {
            try database.queryOne("SELECT state FROM tokens WHERE digital_card_id = ?", [id])?.text(0)
        }

        func replace(by id: String) throws -> [String] {
            let token = try #require(try store.token(id))
            return try database.transaction { tx in
                try store.replaceStepUps(tx, by: token, pan: try PAN(SameCardStoreTests.pan), traceID: "t", nowMs: 5)
            }.map(\.after.digitalCardID)
        }
    }

    /// Replaced: the card's decided INACTIVE tokens on the device. Kept: a digitization still pending (its own
    /// decision sorts it out), live and deleted tokens, another device's, and another card with the same last four.
    @Test func aNewTokenReplacesOnlyTheCardsDecidedStepUpsOnItsDevice() throws {
        let fixture = try Fixture()
        try fixture.token("new", state: .inactive)
        try fixture.token("waiting-1", state: .inactive)
        try fixture.token("waiting-2", state: .inactive)
        try fixture.token("pending", state: .inactive, pending: true)
        try fixture.token("deleted", state: .deactivated)
        try fixture.token("other-device", state: .inactive, device: "device-2")
        try fixture.token("lookalike", pan: Self.lookalike, state: .inactive)
        #expect(try fixture.replace(by: "new") == ["waiting-1", "waiting-2"])
        #expect(try fixture.state("waiting-1") == "DEACTIVATED" && fixture.state("waiting-2") == "DEACTIVATED")
        for kept in ["new", "pending", "other-device", "lookalike"] {
            #expect(try fixture.state(kept) == "INACTIVE", "\(kept)")
        }
        let event = try #require(
            try fixture.database.queryOne(
                "SELECT actor, reason FROM token_events WHERE digital_card_id = 'waiting-1' ORDER BY rowid DESC"))
        #expect(try event.text(0) == "tsp" && event.text(1).contains("token \"new\""))
    }

    /// Expired: decided INACTIVE tokens at or before the cut-off. Kept: a later one, a recent pending digitization,
    /// and tokens that are not waiting for ID&V.
    @Test func onlyDecidedStepUpsPastTheWindowExpire() throws {
        let fixture = try Fixture()
        try fixture.token("old", state: .inactive, atMs: 100)
        try fixture.token("at-cut-off", pan: Self.lookalike, state: .inactive, atMs: 200)
        try fixture.token("recent", state: .inactive, atMs: 201, device: "device-2")
        try fixture.token("pending", state: .inactive, atMs: 201, pending: true, device: "device-3")
        try fixture.token("live", state: .active, atMs: 0, device: "device-4")
        let expired = try fixture.store.expireStepUps(
            decidedAtOrBeforeMs: 200, window: "1 s", traceID: "t", nowMs: 1200)
        #expect(expired.value.stepUps.map(\.after.digitalCardID) == ["old", "at-cut-off"])
        #expect(expired.value.digitizations.isEmpty)
        #expect(expired.value.stepUps.allSatisfy { $0.before.state == .inactive && $0.after.state == .deactivated })
        #expect(try fixture.state("recent") == "INACTIVE" && fixture.state("pending") == "INACTIVE")
        #expect(try fixture.state("live") == "ACTIVE")
    }

    /// A digitization left pending past the window (no decision ever recorded) ends: its token is deactivated and
    /// its request answered DECLINED by the TSP, so a late retry or issuer answer finds it done; its parties are
    /// told DIGITIZATION_EXPIRED. A recent one, and one whose token is no longer INACTIVE, are left alone.
    @Test func aDigitizationLeftPendingPastTheWindowEnds() throws {
        let fixture = try Fixture()
        try fixture.token("stale", state: .inactive, atMs: 100, pending: true)
        try fixture.token("recent", state: .inactive, atMs: 201, pending: true, device: "device-2")
        try fixture.token("deleted", state: .deactivated, atMs: 100, pending: true, device: "device-3")
        _ = try fixture.database.execute(
            "UPDATE tokens SET wallet_node_id = 'wallet-1' WHERE digital_card_id = 'stale'")
        let expired = try fixture.store.expireStepUps(
            decidedAtOrBeforeMs: 200, window: "1 s", traceID: "t", nowMs: 1200)
        #expect(expired.value.stepUps.isEmpty)
        #expect(expired.value.digitizations.map(\.change.after.digitalCardID) == ["stale"])
        #expect(expired.value.digitizations.map(\.requestID) == ["request-stale"])
        #expect(try fixture.state("stale") == "DEACTIVATED" && fixture.state("recent") == "INACTIVE")
        #expect(try fixture.state("deleted") == "DEACTIVATED")
        let request = try #require(
            try fixture.database.queryOne(
                "SELECT status, response FROM digitize_requests WHERE request_id = 'request-stale'"))
        #expect(try request.text(0) == "done")
        let response = try TspV1.DigitizeResponse(serializedBytes: try request.get(1, as: [UInt8].self))
        #expect(response.decision == .declined && response.tokenState == .deactivated && response.decidedBy == "tsp")
        #expect(response.declineReason.contains("within 1 s") && response.declineReason.contains("add the card again"))
        let others = try fixture.database.query(
            "SELECT status FROM digitize_requests WHERE request_id IN ('request-recent', 'request-deleted')")
        #expect(try others.map { try $0.text(0) } == ["pending", "pending"])
        let event = try #require(
            try fixture.database.queryOne(
                "SELECT actor, reason FROM token_events WHERE digital_card_id = 'stale' ORDER BY rowid DESC"))
        #expect(try event.text(0) == "tsp" && event.text(1).contains("digitization expired"))
        let journal = try NotificationStore(database: fixture.database).journaled()
        #expect(journal == expired.notifications && journal.first?.subscribers == ["wallet/wallet-1"])
        guard case .cardState(let body)? = journal.first?.notification.body else {
            Issue.record("not a CARD_STATE: \(String(describing: journal.first))")
            return
        }
        #expect(body.tokenState == .deactivated && body.reasonCode == "DIGITIZATION_EXPIRED")
        #expect(body.digitizeRequestID == "request-stale")
    }

    /// The pending digitizations past the window are found by reading the partial index of pending digitizations
    /// (few: a digitization is pending only while the issuer is asked) and each token by its id.
    @Test func thePendingDigitizationExpiryReadsThroughItsIndexes() throws {
        let fixture = try Fixture()
        let plan = try fixture.database.query(
            "EXPLAIN QUERY PLAN " + TSPStore.stalePendingDigitizationsQuery, [Int64(1)]
        ).map { try $0.text(3) }.joined(separator: "; ")
        #expect(plan.contains("digitize_requests USING INDEX digitize_requests_pending"), "\(plan)")
        #expect(!plan.contains("SCAN tokens"), "\(plan)")
    }

    /// Renews the tokens `ids` to `pan`; their results.
    func renew(_ fixture: Fixture, _ ids: [String], to pan: String) throws -> [TspV1.TokenStateResult] {
        try fixture.store.renewFundingCard(
            ids, pan: try PAN(pan), expiry: nil, actor: "issuer", traceID: "t", nowMs: 5, authorize: { _ in },
            check: { _ in }
        ).value.results
    }

    /// A live token is not renewed to a card live as another token in its wallet account on its device: that card
    /// would have two live tokens there. Its result names the other token and its card stays; elsewhere, or for a
    /// token waiting for ID&V (whose activation is checked), the renewal goes through.
    @Test func aLiveTokenIsNotRenewedToACardLiveBesideIt() throws {
        let fixture = try Fixture()
        try fixture.token("live", state: .active)
        try fixture.token("other-card", pan: Self.lookalike, state: .suspended)
        try fixture.token("other-device", pan: Self.lookalike, state: .active, device: "device-2")
        try fixture.token("waiting", pan: Self.lookalike, state: .inactive)
        let results = try renew(fixture, ["other-card", "other-device", "waiting"], to: Self.pan)
        #expect(results.map(\.statusCode) == [StatusCode.failedPrecondition.rawValue, 0, 0])
        #expect(results[0].tokenState == .suspended)
        #expect(results[0].message.contains("as token \"live\" (ACTIVE)"), "\(results[0].message)")
        #expect(results[0].message.contains("token \"other-card\" keeps its card"), "\(results[0].message)")
        let kept = try fixture.store.fundingCards(
            ["other-card", "other-device"], comparedWith: try PAN(Self.lookalike), authorize: { _ in })
        #expect(kept.map(\.panMatches) == [true, false])
    }

    /// Two tokens of different cards on one device renewed to the same new card in one call: the first takes it,
    /// the second is refused, since the first is live with it by then. A renewal keeping a token's own number
    /// (a new expiry) is not refused, even beside another live token of the card left from before the rule.
    @Test func oneRenewalGivesANewCardToOneLiveTokenPerDevice() throws {
        let fixture = try Fixture()
        try fixture.token("first", state: .active)
        try fixture.token("second", pan: Self.lookalike, state: .active)
        let results = try renew(fixture, ["first", "second"], to: "4242424242424242")
        #expect(results.map(\.statusCode) == [0, StatusCode.failedPrecondition.rawValue])
        #expect(results[1].message.contains("as token \"first\""), "\(results[1].message)")
        try fixture.token("twin", state: .active)
        try fixture.token("twin-2", state: .active)
        #expect(try renew(fixture, ["twin", "twin-2"], to: Self.pan).map(\.statusCode) == [0, 0])
    }

    /// The check every activation and resume goes through: another live token of the same card on the device
    /// refuses it; a deleted one, another card with the same last four, or another device does not.
    @Test func theLiveSiblingCheckComparesTheWholeCard() throws {
        let fixture = try Fixture()
        try fixture.token("waiting", state: .inactive)
        try fixture.token("deleted", state: .deactivated)
        try fixture.token("lookalike", pan: Self.lookalike, state: .active)
        try fixture.token("other-device", state: .active, device: "device-2")
        try fixture.database.transaction { tx in try fixture.store.requireNoLiveSibling(tx, of: "waiting") }
        try fixture.token("suspended", state: .suspended)
        #expect(throws: TSPError.self) {
            try fixture.database.transaction { tx in try fixture.store.requireNoLiveSibling(tx, of: "waiting") }
        }
    }

    /// The expiry runs before every Digitize and ID&V call, so it searches the partial indexes rather than reading
    /// every token and every digitization ever made.
    @Test func theStepUpExpiryReadsThroughItsIndexes() throws {
        let fixture = try Fixture()
        let plan = try fixture.database.query("EXPLAIN QUERY PLAN " + TSPStore.abandonedStepUpsQuery, [Int64(1)])
            .map { try $0.text(3) }.joined(separator: "; ")
        #expect(plan.contains("SEARCH tokens USING INDEX tokens_inactive_age"), "\(plan)")
        // Scanning the partial index reads only the pending digitizations.
        #expect(plan.contains("digitize_requests USING INDEX digitize_requests_pending"), "\(plan)")
        #expect(!plan.contains("SCAN tokens"), "\(plan)")
    }

    /// The expiry's CARD_STATE DEACTIVATED commits with it (the notification journal): a TSP killed before the
    /// broker stored it still tells the wallet at its next start.
    @Test func anExpiredStepUpIsJournaledWithItsNotice() throws {
        let fixture = try Fixture()
        try fixture.token("old", state: .inactive, atMs: 100)
        _ = try fixture.database.execute("UPDATE tokens SET wallet_node_id = 'wallet-1' WHERE digital_card_id = 'old'")
        let expired = try fixture.store.expireStepUps(
            decidedAtOrBeforeMs: 200, window: "1 s", traceID: "t", nowMs: 1200)
        let journal = try NotificationStore(database: fixture.database).journaled()
        #expect(journal == expired.notifications && journal.count == 1)
        #expect(journal.first?.subscribers == ["wallet/wallet-1"] && journal.first?.notification.cardID == "old")
        guard case .cardState(let body)? = journal.first?.notification.body else {
            Issue.record("not a CARD_STATE: \(String(describing: journal.first))")
            return
        }
        #expect(body.tokenState == .deactivated && body.reasonCode == "STEP_UP_EXPIRED")
    }
}
