import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetWallet

/// The wallet's lists in pages (`WalletControl/ListCards`, `WalletLifecycle/ListTransactions` and `Inbox`): every
/// item once, in its order, read through the table or an index from where the previous page ended.
@Suite struct WalletListingTests {
    /// The order `seed` records transactions in, by their times: several share a millisecond, and a later one can
    /// have an earlier time (the TSP's time of the payment, not the wallet's of the notification).
    static func transactionTime(_ index: Int) -> UInt64 { 1_000 + UInt64((index * 7) % 5) }

    /// `cards` digitized cards (card-N with digital card DC-N, of issuer-2's app when N is a multiple of 3 and of
    /// issuer-1's otherwise), `transactions` transactions of DC-1 and DC-2 in turn, and `notifications` messages
    /// in the inbox.
    static func seed(_ store: WalletStore, cards: Int, transactions: Int, notifications: Int) throws {
        for index in 1...cards {
            let card = try store.addPending(
                source: .manual, scheme: .visa, panLast4: String(format: "%04d", index % 10_000),
                receipt: "receipt-\(index)", receiptExpiresAtMs: 2_000_000, terms: nil, walletAccountID: "wa-1",
                nowMs: 1_000_000)
            _ = try store.finishDigitization(
                id: card.id,
                result: TspV1.DigitizeResponse(
                    digitalCardID: "DC-\(index)", tokenState: .active,
                    issuerNodeID: index % 3 == 0 ? "issuer-2" : "issuer-1"),
                nowMs: 1_000_000)
        }
        for index in 0..<transactions {
            try store.record(
                WalletV1.WalletTransaction(
                    transactionID: "txn-\(index)", digitalCardID: index % 2 == 0 ? "DC-1" : "DC-2", amountMinor: 100,
                    currency: "USD", merchant: "Shop \(index)", approved: true,
                    transactionAtMs: transactionTime(index), lastCallTimestampMs: 2_000))
        }
        for index in 0..<notifications {
            _ = try store.keep(
                TspV1.Notification(
                    messageID: "m-\(index)", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "MESSAGING",
                    cardID: "DC-1"),
                nowMs: 1_000_000)
        }
    }

    /// The transaction ids of `seed`'s transactions of `cards` (DC-1 is the even ones), in listing order.
    static func listingOrder(_ count: Int, of cards: Set<Int> = [0, 1]) -> [String] {
        (0..<count).filter { cards.contains($0 % 2) }
            .sorted { (transactionTime($0), $0) < (transactionTime($1), $1) }.map { "txn-\($0)" }
    }

    static func wallet(cards: Int = 7, transactions: Int = 9, notifications: Int = 7) throws -> WalletHarness {
        let store = try WalletStore.inMemory()
        try seed(store, cards: cards, transactions: transactions, notifications: notifications)
        return try WalletHarness(store: store)
    }

    /// Asks pages of `size` until the last; at most 20, so a listing that never ends fails instead of hanging.
    func walk<Item>(
        size: Int32, _ page: (Int32, String) async throws -> (items: [Item], next: String)
    ) async throws -> (items: [Item], pages: Int) {
        var items: [Item] = []
        var token = ""
        var pages = 0
        repeat {
            let answer = try await page(size, token)
            #expect(answer.items.count <= Int(size))
            items += answer.items
            token = answer.next
            pages += 1
        } while !token.isEmpty && pages < 20
        return (items, pages)
    }

    @Test func cardsArePagedInTheOrderTheyWereAdded() async throws {
        let wallet = try Self.wallet()
        let whole = try await wallet.control.listCards(.init())
        #expect(whole.cards.map(\.cardRef) == (1...7).map { "card-\($0)" })
        #expect(whole.nextPageToken.isEmpty)
        for size: Int32 in [1, 2, 3, 7] {
            let (cards, pages) = try await walk(size: size) {
                let page = try await wallet.control.listCards(.init(pageSize: $0, pageToken: $1))
                return (page.cards.map(\.cardRef), page.nextPageToken)
            }
            #expect(cards == (1...7).map { "card-\($0)" }, "page size \(size)")
            #expect(pages == (7 + Int(size) - 1) / Int(size), "page size \(size)")
        }
    }

    @Test func transactionsArePagedInTheOrderOfTheirTimes() async throws {
        let wallet = try Self.wallet()
        let whole = try await wallet.lifecycle.listTransactions(.init())
        #expect(whole.transactions.map(\.transactionID) == Self.listingOrder(9))
        for (cardRef, cards) in [("", Set([0, 1])), ("card-1", [0]), ("card-2", [1])] {
            for size: Int32 in [1, 2, 4] {
                let (ids, _) = try await walk(size: size) {
                    let page = try await wallet.lifecycle.listTransactions(
                        .init(cardRef: cardRef, pageSize: $0, pageToken: $1))
                    return (page.transactions.map(\.transactionID), page.nextPageToken)
                }
                #expect(ids == Self.listingOrder(9, of: cards), "\(cardRef) page size \(size)")
            }
        }
    }

    @Test func theInboxIsPagedOldestFirst() async throws {
        let wallet = try Self.wallet()
        for size: Int32 in [1, 3, 7] {
            let (ids, pages) = try await walk(size: size) {
                let page = try await wallet.lifecycle.inbox(.init(pageSize: $0, pageToken: $1))
                return (page.notifications.map(\.messageID), page.nextPageToken)
            }
            #expect(ids == (0..<7).map { "m-\($0)" }, "page size \(size)")
            #expect(pages == (7 + Int(size) - 1) / Int(size), "page size \(size)")
        }
    }

    /// An issuer app's CurrentTokens pages hold its own tokens only, each once, in the order their cards were added.
    @Test func anIssuerAppsTokensArePaged() async throws {
        let wallet = try Self.wallet()
        for size: Int32 in [1, 2, 5] {
            let (ids, pages) = try await walk(size: size) {
                let page = try await wallet.issuerApp.currentTokens(.init(pageSize: $0, pageToken: $1))
                #expect(page.walletAccountID == "wallet-account-1")
                return (page.tokens.map(\.digitalCardID), page.nextPageToken)
            }
            #expect(ids == ["DC-1", "DC-2", "DC-4", "DC-5", "DC-7"], "page size \(size)")
            #expect(pages == (5 + Int(size) - 1) / Int(size), "page size \(size)")
        }
        await expectRPCError(.invalidArgument, "start again with an empty page_token") {
            _ = try await wallet.issuerApp.currentTokens(.init(pageToken: "DC-2"))
        }
    }

    /// A transaction notified again (an AUTHN answer) is updated in its place: it neither moves behind the others
    /// of its millisecond nor shows twice in a listing under way.
    @Test func aTransactionNotifiedAgainKeepsItsPlace() async throws {
        let wallet = try Self.wallet()
        let first = try await wallet.lifecycle.listTransactions(.init(pageSize: 1))
        let id = try #require(first.transactions.first?.transactionID)
        var again = try #require(first.transactions.first)
        again.approved = false
        try wallet.store.record(again)
        let rest = try await walk(size: 2) {
            let page = try await wallet.lifecycle.listTransactions(
                .init(pageSize: $0, pageToken: $1.isEmpty ? first.nextPageToken : $1))
            return (page.transactions.map(\.transactionID), page.nextPageToken)
        }
        #expect(rest.items == Array(Self.listingOrder(9).dropFirst()))
        let whole = try await wallet.lifecycle.listTransactions(.init()).transactions
        #expect(whole.map(\.transactionID) == Self.listingOrder(9))
        #expect(whole.first { $0.transactionID == id }?.approved == false)
    }

    @Test func aBadPageIsRefused() async throws {
        let wallet = try Self.wallet()
        for size: Int32 in [-1, .min] {
            await expectRPCError(.invalidArgument, "page_size") {
                _ = try await wallet.control.listCards(.init(pageSize: size))
            }
            await expectRPCError(.invalidArgument, "page_size") {
                _ = try await wallet.lifecycle.listTransactions(.init(pageSize: size))
            }
            await expectRPCError(.invalidArgument, "page_size") {
                _ = try await wallet.lifecycle.inbox(.init(pageSize: size))
            }
        }
        // Tokens of each call with keys that call never makes, and a token of another call.
        func rowKeys(_ call: String) -> [String] {
            [
                "card-3", "p2.", PageRequest.token(after: "0", call: call), PageRequest.token(after: "x", call: call),
                PageRequest.token(after: PageRequest.key(in: "", ms: 1_000, row: 2), call: call),
                PageRequest.token(after: "1", call: "CurrentTokens"),
            ]
        }
        for token in rowKeys("ListCards") {
            await expectRPCError(.invalidArgument, "start again with an empty page_token") {
                _ = try await wallet.control.listCards(.init(pageToken: token))
            }
        }
        for token in rowKeys("Inbox") {
            await expectRPCError(.invalidArgument, "start again with an empty page_token") {
                _ = try await wallet.lifecycle.inbox(.init(pageToken: token))
            }
        }
        let timeKeys = [
            "txn-1", "p2.", PageRequest.token(after: "3", call: "ListTransactions"),
            PageRequest.token(after: "\u{1F}x:1", call: "ListTransactions"),
            PageRequest.token(after: "\u{1F}1000:0", call: "ListTransactions"),
            PageRequest.token(after: PageRequest.key(in: "", ms: 1_000, row: 2), call: "Inbox"),
        ]
        for token in timeKeys {
            await expectRPCError(.invalidArgument, "start again with an empty page_token") {
                _ = try await wallet.lifecycle.listTransactions(.init(pageToken: token))
            }
        }
    }

    /// A page token of one card's transactions asked for another card (or for every card, and the other way
    /// round) is refused: going on from its place in another listing would skip or repeat transactions.
    @Test func aTransactionPageTokenContinuesOnlyItsOwnListing() async throws {
        let wallet = try Self.wallet()
        let first = try await wallet.lifecycle.listTransactions(.init(cardRef: "card-1", pageSize: 2))
        let every = try await wallet.lifecycle.listTransactions(.init(pageSize: 2))
        for (cardRef, token) in [
            ("card-2", first.nextPageToken), ("", first.nextPageToken), ("card-1", every.nextPageToken),
        ] {
            await expectRPCError(.invalidArgument, "card_ref of that listing") {
                _ = try await wallet.lifecycle.listTransactions(
                    .init(cardRef: cardRef, pageSize: 2, pageToken: token))
            }
        }
    }

    /// Each page starts where the previous one ended through the table's own order or an index, instead of
    /// reading and sorting every row for every page.
    @Test func pagesAreReadThroughAnIndex() throws {
        let store = try WalletStore.inMemory()
        try Self.seed(store, cards: 3, transactions: 5, notifications: 3)
        let queries: [(String, [any SQLValueConvertible], String)] = [
            (WalletStore.cardPageQuery, [Int64(1), Int64(10)], "INTEGER PRIMARY KEY (rowid>?)"),
            (WalletStore.inboxPageQuery, [Int64(1), Int64(10)], "INTEGER PRIMARY KEY (rowid>?)"),
            (
                WalletStore.issuerCardPageQuery, ["issuer-1", Int64(1), Int64(10)],
                "INDEX cards_issuer_node (issuer_node_id=? AND status=? AND rowid>?)"
            ),
            (
                WalletStore.transactionPageQuery(oneCard: false), [Int64(0), Int64(0), Int64(10)],
                "INDEX transactions_made"
            ),
            (
                WalletStore.transactionPageQuery(oneCard: true), ["DC-1", Int64(0), Int64(0), Int64(10)],
                "INDEX transactions_card_made"
            ),
        ]
        for (query, parameters, index) in queries {
            let plan = try store.database.query("EXPLAIN QUERY PLAN " + query, parameters)
                .map { try $0.text(3) }.joined(separator: "; ")
            #expect(plan.hasPrefix("SEARCH") && plan.contains(index), "\(plan)")
            #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }

    /// The inbox keeps its newest messages, `capacity` of them; a message kept again (a redelivery) changes
    /// nothing. A listing under way goes on from where it was with the messages kept since.
    @Test func theInboxKeepsItsNewestMessages() async throws {
        let store = try WalletStore.inMemory()
        func keep(_ index: Int) throws -> Bool {
            try store.keep(
                TspV1.Notification(
                    messageID: "m-\(index)", sender: "CPS", topic: "D1_NOTIFICATION", messageType: "MESSAGING",
                    cardID: "DC-1"),
                nowMs: 1_000_000, capacity: 3)
        }
        for index in 0..<5 { #expect(try keep(index)) }
        #expect(try store.inbox().map(\.messageID) == ["m-2", "m-3", "m-4"])
        let firstPage = try store.inboxPage(afterRow: 0, limit: 2)
        #expect(try !keep(4), "kept before")
        #expect(try store.inbox().map(\.messageID) == ["m-2", "m-3", "m-4"])
        #expect(try store.hasKept(messageID: "m-4") && !store.hasKept(messageID: "m-1"))
        #expect(try keep(5))
        let rest = try store.inboxPage(afterRow: try #require(firstPage.last).row, limit: 10)
        #expect(rest.map(\.notification.messageID) == ["m-4", "m-5"])
    }
}
