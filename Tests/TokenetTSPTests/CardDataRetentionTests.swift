import Foundation
import Testing
import TokenetCard
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// The card's security code (CVV2) is kept only while the issuer may still need it, and card data given for a
/// digitization that never came is deleted an hour after it expired: the TSP kept both for good before.
@Suite struct CardDataRetentionTests {
    static let card = CardData(
        accountNumber: SameCardStoreTests.pan, expirationDate: .init(month: "12", year: "2030"), cvv2: "837")

    static func receipt(_ store: TSPStore, _ receipt: String) throws -> EligibilityReceiptRecord? {
        try store.database.transaction { tx in try store.eligibilityReceipt(receipt, in: tx) }
    }

    static func kept(_ database: Database, _ table: String, _ key: String, _ value: String) throws -> Int64? {
        try database.queryOne("SELECT security_code_kept FROM \(table) WHERE \(key) = ?", [value])?.int64(0)
    }

    @Test func aDecidedDigitizationKeepsItsCardWithoutTheSecurityCode() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        defer { try? store.database.close() }
        #expect(try Self.receipt(store, eligibility.eligibilityReceipt)?.card.cvv2 == "123")
        _ = try await tsp.digitize(eligibility)
        let after = try #require(try Self.receipt(store, eligibility.eligibilityReceipt))
        #expect(after.card.cvv2 == nil)
        #expect(after.card.accountNumber == TSPHarness.visa)
        #expect(try Self.kept(store.database, "eligibility_receipts", "receipt", eligibility.eligibilityReceipt) == 0)
    }

    @Test func aRedeemedPushReceiptOrSessionKeepsItsCardWithoutTheSecurityCode() throws {
        let fixture = try SameCardStoreTests.Fixture()
        try fixture.store.insertPushReceipt(
            payload: "p-1", issuerID: "bank-a", walletAccountID: nil, card: Self.card, nowMs: 0, expiresAtMs: 100)
        try fixture.store.insertPushSession(
            id: "s-1", walletAccountID: "account-1", card: Self.card, nowMs: 0, expiresAtMs: 100)
        // The card redeemed goes on into eligibility whole; the row keeps it without the code.
        let pushed = try fixture.store.pushReceiptCard(
            payload: "p-1", walletAccountID: "account-1", walletNodeID: "wallet-1", nowMs: 1)
        #expect(pushed.cvv2 == "837")
        try fixture.database.transaction { tx in
            try fixture.store.consume(.pushReceipt("p-1"), card: pushed, nowMs: 1, in: tx)
        }
        let sessionCard = try fixture.store.pushSessionCard(id: "s-1", walletAccountID: "account-1", nowMs: 1)
        #expect(sessionCard.cvv2 == "837")
        try fixture.database.transaction { tx in
            try fixture.store.consume(.pushSession("s-1"), card: sessionCard, nowMs: 1, in: tx)
        }
        let receipt = try #require(
            try fixture.database.queryOne("SELECT card_data FROM push_receipts WHERE payload = 'p-1'"))
        #expect(try fixture.store.openCard(try receipt.blob(0), rowID: "push-receipt:p-1").cvv2 == nil)
        let session = try #require(
            try fixture.database.queryOne("SELECT card_data FROM push_sessions WHERE id = 's-1'"))
        #expect(try fixture.store.openCard(try session.blob(0), rowID: "push-session:s-1").cvv2 == nil)
        #expect(try Self.kept(fixture.database, "push_receipts", "payload", "p-1") == 0)
        #expect(try Self.kept(fixture.database, "push_sessions", "id", "s-1") == 0)
    }

    /// The sweep: codes still kept on rows already used (stored before codes were forgotten at use) are forgotten;
    /// what expired unused is deleted once an hour past its expiry; a pending digitization keeps its code, since
    /// asking the issuer again needs it.
    @Test func theSweepForgetsSpentCodesAndDeletesWhatExpiredUnused() throws {
        let fixture = try SameCardStoreTests.Fixture()
        let store = fixture.store
        func receipt(_ id: String, expiresAtMs: UInt64) throws {
            try store.insertEligibilityReceipt(
                EligibilityReceiptRecord(
                    receipt: id, walletAccountID: "account-1", deviceID: "device-1", issuerID: "bank-a",
                    scheme: .visa, panLast4: "1111", card: Self.card, inputMethod: .manual, termsID: nil,
                    expiresAtMs: expiresAtMs, usedByRequestID: nil),
                nowMs: 0)
        }
        let hour = TSPStore.expiredCardDataGraceMs
        try receipt("done", expiresAtMs: 100)
        try receipt("pending", expiresAtMs: 100)
        try receipt("expired-long-ago", expiresAtMs: 100)
        try receipt("expired-just-now", expiresAtMs: hour)
        try receipt("valid", expiresAtMs: 10 * hour)
        for (request, receipt, status) in [("r-done", "done", "done"), ("r-pending", "pending", "pending")] {
            try fixture.token("D-\(request)", state: .inactive)
            _ = try fixture.database.execute(
                "INSERT INTO digitize_requests (request_id, receipt, digital_card_id, status, created_at_ms) "
                    + "VALUES (?, ?, ?, ?, 0)", [request, receipt, "D-\(request)", status])
            _ = try fixture.database.execute(
                "UPDATE eligibility_receipts SET used_by_request_id = ? WHERE receipt = ?", [request, receipt])
        }
        try store.insertPushSession(
            id: "s-old", walletAccountID: "account-1", card: Self.card, nowMs: 0, expiresAtMs: 5)
        try store.insertPushReceipt(
            payload: "p-used", issuerID: "bank-a", walletAccountID: nil, card: Self.card, nowMs: 0, expiresAtMs: 5)
        _ = try fixture.database.execute("UPDATE push_receipts SET used_at_ms = 1")

        let sweep = try store.forgetSpentCardData(nowMs: hour + 200, limit: 1)
        #expect(sweep == .init(securityCodesForgotten: 2, expiredDeleted: 2))
        #expect(try store.forgetSpentCardData(nowMs: hour + 200) == .init())
        #expect(try Self.receipt(store, "done")?.card.cvv2 == nil)
        #expect(try Self.receipt(store, "pending")?.card.cvv2 == "837")
        #expect(try Self.receipt(store, "expired-long-ago") == nil)
        #expect(try Self.receipt(store, "expired-just-now")?.card.cvv2 == "837")
        #expect(try Self.receipt(store, "valid")?.card.cvv2 == "837")
        #expect(try fixture.database.queryOne("SELECT 1 FROM push_sessions WHERE id = 's-old'") == nil)
        let used = try #require(try fixture.database.queryOne("SELECT card_data FROM push_receipts"))
        #expect(try store.openCard(try used.blob(0), rowID: "push-receipt:p-used").cvv2 == nil)
    }
}
