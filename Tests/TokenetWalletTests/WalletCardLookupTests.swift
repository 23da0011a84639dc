import Testing
import TokenetStorage
import TokenetWire

@testable import TokenetWallet

/// Finding a card by its token's digital card id (each TSP notification, an issuer app's answer): the right card
/// among many, read through an index rather than by reading every card.
@Suite struct WalletCardLookupTests {
    @Test func theLookupsFindTheRightCardAmongMany() throws {
        let store = try WalletStore.inMemory()
        try WalletListingTests.seed(store, cards: 40, transactions: 0, notifications: 0)
        let card = try #require(try store.card(digitalCardID: "DC-27"))
        #expect(card.cardRef == "card-27" && card.result?.digitalCardID == "DC-27")
        #expect(try store.card(digitalCardID: "DC-27", issuerNodeID: "issuer-2")?.cardRef == "card-27")
        // DC-27 is issuer-2's (27 is a multiple of 3): issuer-1's app does not find it.
        #expect(try store.card(digitalCardID: "DC-27", issuerNodeID: "issuer-1") == nil)
        #expect(try store.card(digitalCardID: "DC-28", issuerNodeID: "issuer-1")?.cardRef == "card-28")
        #expect(try store.card(digitalCardID: "DC-41") == nil)
        #expect(try store.card(digitalCardID: "") == nil)
        #expect(try store.card(digitalCardID: "", issuerNodeID: "issuer-1") == nil)
    }

    /// Were the TSP ever to name one token for two digitizations, the card added first is chosen, as reading every
    /// card in order and taking the first match chose it.
    @Test func aTokenHeldTwiceIsTheCardAddedFirst() throws {
        let store = try WalletStore.inMemory()
        for _ in 0..<3 {
            let card = try store.addPending(
                source: .manual, scheme: .visa, panLast4: "1111", receipt: "r", receiptExpiresAtMs: 10, terms: nil,
                walletAccountID: "wa-1", nowMs: 1)
            _ = try store.finishDigitization(
                id: card.id, result: TspV1.DigitizeResponse(digitalCardID: "DC-same", issuerNodeID: "issuer-1"),
                nowMs: 1)
        }
        #expect(try store.card(digitalCardID: "DC-same")?.cardRef == "card-1")
        #expect(try store.card(digitalCardID: "DC-same", issuerNodeID: "issuer-1")?.cardRef == "card-1")
    }

    /// Cards digitized before the wallet kept digital card ids in their own column (schema 6) are found too: the
    /// store copies each id out of the stored result when it opens.
    @Test func cardsFromBeforeTheIndexAreFound() throws {
        let database = try Database.openInMemory()
        try Migrator(Array(WalletStore.migrations.prefix(6))).migrate(database)
        let results = [
            ("DIGITIZED", TspV1.DigitizeResponse(decision: .approved, digitalCardID: "DC-old-1")),
            ("DECLINED", TspV1.DigitizeResponse(decision: .declined, declineReason: "no")),
            ("DIGITIZED", TspV1.DigitizeResponse(decision: .approved, digitalCardID: "DC-old-3")),
        ]
        for (status, result) in results {
            _ = try database.execute(
                """
                INSERT INTO cards (source, scheme, pan_last4, status, eligibility_receipt, receipt_expires_at_ms,
                    result, issuer_node_id, created_at_ms, updated_at_ms)
                VALUES ('manual', 1, '1111', ?, 'receipt', 0, ?, 'issuer-1', 1, 1)
                """, [status, try result.serializedBytes()])
        }
        let store = try WalletStore(database: database)
        #expect(try store.card(digitalCardID: "DC-old-3")?.cardRef == "card-3")
        #expect(try store.card(digitalCardID: "DC-old-1", issuerNodeID: "issuer-1")?.cardRef == "card-1")
        let unfilled = try database.query("SELECT id FROM cards WHERE digital_card_id IS NULL")
        #expect(unfilled.isEmpty)
    }

    /// Each lookup is one search through `cards_digital_card`, in id order without a sort.
    @Test func theLookupsReadThroughAnIndex() throws {
        let store = try WalletStore.inMemory()
        try WalletListingTests.seed(store, cards: 5, transactions: 0, notifications: 0)
        let queries: [(String, [any SQLValueConvertible])] = [
            (WalletStore.digitalCardQuery, ["DC-2"]),
            (WalletStore.issuerDigitalCardQuery, ["DC-2", "issuer-1"]),
        ]
        for (query, parameters) in queries {
            let plan = try store.database.query("EXPLAIN QUERY PLAN " + query, parameters)
                .map { try $0.text(3) }.joined(separator: "; ")
            #expect(
                plan.hasPrefix("SEARCH") && plan.contains("INDEX cards_digital_card (digital_card_id=?)"), "\(plan)")
            #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }
}
