import Testing
import TokenetCard

@testable import TokenetTSP

/// Payment-key batches in the TSP's storage. ReplenishPaymentKeys reads the token before it stores the batch, and a
/// suspend or delete can commit in between: the batch's own transaction decides, so no batch (nor its MG
/// REPLENISHMENT to the issuer app) is stored for a token that no longer pays.
@Suite struct KeyBatchStoreTests {
    @Test func aBatchIsStoredForAnActiveToken() throws {
        let fixture = try SameCardStoreTests.Fixture()
        try fixture.token("D1", state: .active)
        _ = try fixture.store.insertKeyBatch(id: "b1", digitalCardID: "D1", issued: 10, remainingBefore: 2, nowMs: 1)
        #expect(try fixture.store.keyBatchCount(of: "D1") == 1)
    }

    @Test func aRequestIDNamesOneBatchPerToken() throws {
        let fixture = try SameCardStoreTests.Fixture()
        try fixture.token("D1", state: .active)
        try fixture.token("D2", state: .active)
        let first = try fixture.store.insertKeyBatch(
            id: "b1", digitalCardID: "D1", issued: 10, remainingBefore: 2, requestID: "r", nowMs: 1)
        let again = try fixture.store.insertKeyBatch(
            id: "b2", digitalCardID: "D1", issued: 12, remainingBefore: 0, requestID: "r", nowMs: 2)
        #expect(first.value == .init(id: "b1", issued: 10, reissued: false))
        #expect(again.value == .init(id: "b1", issued: 10, reissued: true))
        let other = try fixture.store.insertKeyBatch(
            id: "b3", digitalCardID: "D2", issued: 10, remainingBefore: 2, requestID: "r", nowMs: 3)
        #expect(other.value == .init(id: "b3", issued: 10, reissued: false))
        #expect(try fixture.store.keyBatchCount(of: "D1") == 1)
        #expect(try fixture.store.keyBatchCount(of: "D2") == 1)
    }

    /// A token keeps its latest batches only, whatever a wallet asking in a loop sends; a recent request id is still
    /// answered with its batch, and another token's batches are not touched.
    @Test func aTokenKeepsItsLatestBatchesOnly() throws {
        let fixture = try SameCardStoreTests.Fixture()
        try fixture.token("D1", state: .active)
        try fixture.token("D2", state: .active)
        _ = try fixture.store.insertKeyBatch(id: "other", digitalCardID: "D2", issued: 10, remainingBefore: 0, nowMs: 1)
        let kept = TSPStore.keptKeyBatches
        for index in 0..<(kept + 30) {
            _ = try fixture.store.insertKeyBatch(
                id: "b\(index)", digitalCardID: "D1", issued: 10, remainingBefore: 0, requestID: "r\(index)",
                nowMs: UInt64(index))
        }
        #expect(try fixture.store.keyBatchCount(of: "D1") == kept)
        #expect(try fixture.store.keyBatchCount(of: "D2") == 1)
        let recent = try fixture.store.insertKeyBatch(
            id: "again", digitalCardID: "D1", issued: 10, remainingBefore: 0, requestID: "r\(kept + 29)", nowMs: 999)
        #expect(recent.value == .init(id: "b\(kept + 29)", issued: 10, reissued: true))
    }

    @Test(arguments: [TokenLifecycleStateMachine.State.inactive, .suspended, .deactivated])
    func aTokenThatNoLongerPaysGetsNoBatch(_ state: TokenLifecycleStateMachine.State) throws {
        let fixture = try SameCardStoreTests.Fixture()
        try fixture.token("D1", state: state)
        do {
            _ = try fixture.store.insertKeyBatch(
                id: "b1", digitalCardID: "D1", issued: 10, remainingBefore: 2, nowMs: 1)
            Issue.record("a batch was stored for a \(state) token")
        } catch let error as TSPError {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("\(state)"))
        }
        #expect(try fixture.store.keyBatchCount(of: "D1") == 0)
    }

    @Test func anUnknownTokenGetsNoBatch() throws {
        let fixture = try SameCardStoreTests.Fixture()
        do {
            _ = try fixture.store.insertKeyBatch(
                id: "b1", digitalCardID: "D9", issued: 10, remainingBefore: 2, nowMs: 1)
            Issue.record("a batch was stored for an unknown token")
        } catch let error as TSPError {
            #expect(error.code == .notFound)
        }
        #expect(try fixture.store.keyBatchCount(of: "D9") == 0)
    }
}
