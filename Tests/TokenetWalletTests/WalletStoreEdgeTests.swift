import Foundation
import Testing
import TokenetRPC
import TokenetStorage
import TokenetTestSupport
import TokenetWire

@testable import TokenetWallet

/// The wallet's store at its edges: numbers past their range from a TSP, a lock held by another process, a full
/// disk met on the way to a payment, and a token state that arrives as its card is recorded.
@Suite struct WalletStoreEdgeTests {
    static func pendingCard(_ store: WalletStore, receiptExpiresAtMs: UInt64 = 1) throws -> WalletCardRecord {
        try store.addPending(
            source: .manual, scheme: .visa, panLast4: "1111", receipt: "receipt-1",
            receiptExpiresAtMs: receiptExpiresAtMs, terms: nil, walletAccountID: "account-1", nowMs: 1)
    }

    /// A CARD_STATE whose card is recorded between the handler's look and the store keeping it early is not kept
    /// for an answer already recorded (it waited there for good): the store returns the card, for the handler to
    /// apply the state to it.
    @Test func aStateForACardRecordedMeanwhileIsNotKeptEarly() throws {
        let store = try WalletStore.inMemory()
        let card = try Self.pendingCard(store)
        _ = try store.beginDigitization(id: card.id, requestID: "request-1", termsAcceptedAtMs: 1, nowMs: 1)
        let id = "DNITHE000000000000000001"
        #expect(try store.card(digitalCardID: id) == nil)  // the handler's look
        _ = try store.finishDigitization(
            id: card.id,
            result: TspV1.DigitizeResponse(
                decision: .approved, digitalCardID: id, tokenState: .inactive, stateVersion: 1),
            nowMs: 2)
        let recorded = try store.keepEarlyState(digitalCardID: id, state: .deactivated, version: 2, nowMs: 3)
        #expect(recorded?.cardRef == card.cardRef)
        #expect(try store.database.query("SELECT * FROM early_card_states").isEmpty)
        // A token no card holds yet is still kept.
        #expect(try store.keepEarlyState(digitalCardID: "DNITHE2", state: .active, version: 2, nowMs: 3) == nil)
        #expect(try store.database.query("SELECT * FROM early_card_states").count == 1)
    }

    /// Numbers a TSP sends past Int64's or UInt32's range are kept at the range's end: converted as they were,
    /// they trapped, and a notification carrying one crashed the node at each redelivery.
    @Test func numbersPastTheirRangeAreKeptAtItsEnd() throws {
        let store = try WalletStore.inMemory()
        let card = try Self.pendingCard(store, receiptExpiresAtMs: .max)
        try store.record(
            WalletV1.WalletTransaction(
                transactionID: "txn-1", digitalCardID: "DNITHE1", amountMinor: 1, currency: "USD", merchant: "Shop",
                approved: true, transactionAtMs: .max, lastCallTimestampMs: .max))
        _ = try store.addPaymentKeys(cardID: card.id, count: .max)
        let keys = try store.addPaymentKeys(cardID: card.id, count: .max)
        #expect(keys.remaining == .max)
        #expect(keys.batches == 2)
    }

    /// Another process that holds the database's write lock past the busy timeout is a passing state: UNAVAILABLE
    /// with what to do, where it was INTERNAL, read as a fault of the wallet's own.
    @Test func aLockHeldByAnotherProcessIsUnavailable() throws {
        let path = try TestScratch.path("wallet-busy") + "/" + WalletNode.databaseFileName
        let store = try WalletStore(
            database: try Database.open(path: path, options: Database.Options(busyTimeout: .milliseconds(50))))
        let other = try Database.open(path: path)
        // The other connection's write transaction holds the lock while the wallet tries to write.
        let error = try other.transaction { _ in
            #expect(throws: WalletError.self) { _ = try Self.pendingCard(store) }
        }
        #expect(error?.rpcError.code == .unavailable)
        #expect(error?.rpcError.message.contains("locked by another connection") == true)
    }

    /// A payment that finds no key left and cannot record the request for a new batch (its disk is full) says so
    /// with RESOURCE_EXHAUSTED and what to do: the cause was dropped when the message was made, and it was INTERNAL.
    @Test func aFullDiskOnTheWayToAPaymentIsResourceExhausted() async throws {
        let wallet = try WalletHarness()
        _ = try await wallet.control.addCard(WalletHarness.manual())
        _ = try await wallet.control.acceptTerms(.init(cardRef: "card-1"))
        try wallet.store.database.executeScript(
            """
            DELETE FROM payment_keys;
            CREATE TABLE filler (x);
            CREATE TRIGGER grow BEFORE INSERT ON payment_keys BEGIN INSERT INTO filler VALUES (zeroblob(100000)); END;
            """)
        try FullDisk.hold(wallet.store.database)
        await expectRPCError(.resourceExhausted, "disk is full") {
            try await wallet.lifecycle.usePaymentKey(.init(cardRef: "card-1"))
        }
    }
}
