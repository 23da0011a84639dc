import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// `Transactions/ListTransactions` in pages: every transaction once, in the order they were made, for every token
/// or one.
@Suite struct TransactionListingTests {
    /// Seven payments with two ACTIVE tokens (first, second, first, second, first, first, second); the clock moves a
    /// second after the fourth and stands still otherwise, so most share a millisecond and keep the order they were
    /// made in.
    static func tspWithTransactions() async throws -> (tsp: TSPHarness, tokens: [String], made: [(String, String)]) {
        let tsp = try TSPHarness.make()
        let tokens = try await tsp.activeTokens(2)
        let client = NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
        var made: [(String, String)] = []
        for (index, token) in [0, 1, 0, 1, 0, 0, 1].map({ tokens[$0] }).enumerated() {
            if index == 4 { tsp.clock.advance(seconds: 1) }
            let paid = try await client.simulateTransaction(
                .init(digitalCardID: token, amountMinor: Int64(100 + index), merchant: "Shop \(index)"))
            made.append((token, paid.transactionID))
        }
        return (tsp, tokens, made)
    }

    /// A payment is stored only while its token is ACTIVE, checked where it is stored: a suspend committed after the
    /// service looked left an approved payment on a token that could not pay.
    @Test func aPaymentIsNotStoredForATokenSuspendedSinceItWasChecked() async throws {
        let tsp = try TSPHarness.make()
        let token = try #require(try await tsp.activeTokens(1).first)
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1).changeTokenState(
            .init(digitalCardID: token, action: .suspend, reasonCode: "FRAUD_SUSPECTED"))
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        let payment = TspV1.TspTransaction(
            transactionID: "txn-late", digitalCardID: token, amountMinor: 100, currency: "USD", merchant: "Shop",
            atMs: 1, approved: true)
        #expect {
            _ = try store.insertTransaction(payment, authnExpiresAtMs: nil)
        } throws: { error in
            (error as? TSPError)?.code == .failedPrecondition
                && (error as? TSPError)?.message.contains("only an ACTIVE token can pay") == true
        }
        #expect(try store.database.query("SELECT id FROM transactions").isEmpty)
    }

    func walk(_ tsp: TSPHarness, _ request: TspV1.ListTransactionsRequest) async throws
        -> (ids: [String], pages: Int)
    {
        let client = NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
        var request = request
        var ids: [String] = []
        var pages = 0
        repeat {
            let page = try await client.listTransactions(request)
            #expect(page.transactions.count <= Int(request.pageSize))
            ids += page.transactions.map(\.transactionID)
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages <= 10
        return (ids, pages)
    }

    @Test func pagesListEveryTransactionOnceInOrder() async throws {
        let (tsp, _, made) = try await Self.tspWithTransactions()
        let whole = try await NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
            .listTransactions(.init())
        #expect(whole.transactions.map(\.transactionID) == made.map(\.1))
        #expect(whole.nextPageToken.isEmpty)
        for size: Int32 in [1, 2, 3, 7] {
            let (listed, pages) = try await walk(tsp, .init(pageSize: size))
            #expect(listed == made.map(\.1), "page size \(size)")
            #expect(pages == (7 + Int(size) - 1) / Int(size), "page size \(size)")
        }
    }

    @Test func pagesOfOneToken() async throws {
        let (tsp, tokens, made) = try await Self.tspWithTransactions()
        for token in tokens {
            let (listed, pages) = try await walk(tsp, .init(digitalCardID: token, pageSize: 2))
            let expected = made.filter { $0.0 == token }.map(\.1)
            #expect(listed == expected)
            #expect(pages == (expected.count + 1) / 2)
        }
    }

    /// A digital card id that names no token is NOT_FOUND with the id, not an empty listing that reads as a token
    /// without payments; a token without payments still lists none.
    @Test func anUnknownTokenIsNotFound() async throws {
        let tsp = try TSPHarness.make()
        let tokens = try await tsp.activeTokens(1)
        let client = NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
        await expectRPCError(.notFound, "no token has digital card id \"DNITHE000000000000000000000000\"") {
            try await client.listTransactions(.init(digitalCardID: "DNITHE000000000000000000000000"))
        }
        // A wallet's card reference in its place is said to be one, with where the digital card id is shown.
        await expectRPCError(
            .notFound,
            "no token has digital card id \"card-1\"; card-1 is a wallet's or an issuer's card reference: the TSP "
                + "names a token by its digital card id (DNITHE… or DWSPMC…), which tokenet tsp tokens lists"
        ) {
            try await client.listTransactions(.init(digitalCardID: "card-1"))
        }
        // So is a card number (masked by the node on its way out, as in every status message).
        await expectRPCError(
            .notFound,
            "no token has digital card id \"4761000010000009\"; that is a card number: the TSP names a token by its "
                + "digital card id"
        ) {
            try await client.listTransactions(.init(digitalCardID: "4761000010000009"))
        }
        let none = try await client.listTransactions(.init(digitalCardID: tokens[0]))
        #expect(none.transactions.isEmpty)
        #expect(none.nextPageToken.isEmpty)
    }

    @Test func aBadPageIsRefused() async throws {
        let (tsp, _, _) = try await Self.tspWithTransactions()
        let client = NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
        await expectRPCError(.invalidArgument, "page_size") {
            try await client.listTransactions(.init(pageSize: -1))
        }
        let foreign = [
            "txn-1", "p1.", PageRequest.token(after: "7", call: "ListTransactions"),
            PageRequest.token(after: "\u{1F}x:1", call: "ListTransactions"),
            PageRequest.token(after: "\u{1F}5:0", call: "ListTransactions"),
            PageRequest.token(after: "\u{1F}5:", call: "ListTransactions"),
        ]
        for token in foreign {
            await expectRPCError(.invalidArgument, "start again with an empty page_token") {
                try await client.listTransactions(.init(pageToken: token))
            }
        }
    }

    /// A page token continues the listing it came from: asked with another digital_card_id (or with none, or with
    /// one after a listing of every token) it is refused, instead of skipping or repeating transactions.
    @Test func aPageTokenContinuesOnlyItsOwnListing() async throws {
        let (tsp, tokens, made) = try await Self.tspWithTransactions()
        let client = NotificationFlowTests.transactions(tsp, as: LifecycleTests.operator1)
        let first = try await client.listTransactions(.init(digitalCardID: tokens[0], pageSize: 2))
        #expect(!first.nextPageToken.isEmpty)
        let every = try await client.listTransactions(.init(pageSize: 2))
        for (token, pageToken) in [
            (tokens[1], first.nextPageToken), ("", first.nextPageToken), (tokens[0], every.nextPageToken),
        ] {
            await expectRPCError(.invalidArgument, "digital_card_id") {
                try await client.listTransactions(.init(digitalCardID: token, pageSize: 2, pageToken: pageToken))
            }
        }
        let rest = try await client.listTransactions(
            .init(digitalCardID: tokens[0], pageSize: 10, pageToken: first.nextPageToken))
        #expect(rest.transactions.map(\.transactionID) == made.filter { $0.0 == tokens[0] }.map(\.1).suffix(2))
    }

    /// Each page is read in the order of an index from where the previous one ended, instead of reading and
    /// sorting every transaction for every page.
    @Test func aPageIsReadThroughAnIndex() async throws {
        let (tsp, tokens, _) = try await Self.tspWithTransactions()
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        for oneToken in [false, true] {
            let parameters: [any SQLValueConvertible] =
                (oneToken ? [tokens[0]] : []) + [Int64(0), Int64(0), Int64(10)]
            let plan = try database.query(
                "EXPLAIN QUERY PLAN " + TSPStore.transactionPageQuery(oneToken: oneToken), parameters
            ).map { try $0.text(3) }.joined(separator: "; ")
            #expect(plan.contains("SEARCH transactions USING INDEX"), "\(plan)")
            #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
        }
    }
}
