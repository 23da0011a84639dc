import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// `TspControl/TokenHistory` in pages: a token suspended and resumed again and again has no bound on its events,
/// so they are listed in pages, every event once in the order recorded, and a page token continues only the history
/// of its own token.
@Suite struct TokenHistoryListingTests {
    /// Two ACTIVE tokens; the first gets `changes` more events (suspended and resumed in turn), written to its
    /// database as the lifecycle records them.
    static func tspWithHistory(changes: Int) async throws -> (tsp: TSPHarness, tokens: [String]) {
        let tsp = try TSPHarness.make()
        let tokens = try await tsp.activeTokens(2)
        try record(changes: changes, of: tokens[0], in: tsp.directory)
        return (tsp, tokens)
    }

    /// Appends `changes` events to a token's history (SUSPENDED and ACTIVE in turn, reasons r-0, r-1, …).
    static func record(changes: Int, of token: String, in directory: String) throws {
        let database = try Database.open(path: directory + "/tsp.sqlite")
        defer { try? database.close() }
        try database.transaction { tx in
            for index in 0..<changes {
                let suspend = index % 2 == 0
                _ = try tx.execute(
                    """
                    INSERT INTO token_events (digital_card_id, at_ms, from_state, to_state, actor, reason, trace_id)
                    VALUES (?, ?, ?, ?, 'operator', ?, '')
                    """,
                    [
                        token, Int64(1_000 + index / 3), suspend ? "ACTIVE" : "SUSPENDED",
                        suspend ? "SUSPENDED" : "ACTIVE", "r-\(index)",
                    ])
            }
        }
    }

    @Test(arguments: [1, 2, 5, 0])
    func pagesListEveryEventOnceInOrder(pageSize: Int32) async throws {
        let (tsp, tokens) = try await Self.tspWithHistory(changes: 11)
        let all = try await tsp.control.tokenHistory(.init(digitalCardID: tokens[0], pageSize: 1000))
        #expect(all.nextPageToken.isEmpty)
        #expect(all.events.filter { $0.actor == "operator" }.map(\.reason) == (0..<11).map { "r-\($0)" })
        var request = TspV1.TokenHistoryRequest(digitalCardID: tokens[0], pageSize: pageSize)
        var events: [TspV1.TokenEvent] = []
        var pages = 0
        repeat {
            let page = try await tsp.control.tokenHistory(request)
            #expect(page.token?.digitalCardID == tokens[0])
            #expect(page.events.count <= (pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)))
            events += page.events
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages <= all.events.count
        #expect(events == all.events)
        let size = pageSize == 0 ? PageRequest.defaultSize : Int(pageSize)
        #expect(pages == (all.events.count + size - 1) / size)
    }

    @Test func aBadOrForeignPageTokenIsRefused() async throws {
        let (tsp, tokens) = try await Self.tspWithHistory(changes: 4)
        let first = try await tsp.control.tokenHistory(.init(digitalCardID: tokens[0], pageSize: 2))
        try #require(!first.nextPageToken.isEmpty)
        await expectRPCError(.invalidArgument, "digital_card_id") {
            try await tsp.control.tokenHistory(.init(digitalCardID: tokens[1], pageToken: first.nextPageToken))
        }
        let tokensPage = try await tsp.control.listTokens(.init(pageSize: 1))
        try #require(!tokensPage.nextPageToken.isEmpty)
        for token in [
            tokensPage.nextPageToken, "p1.!!!", PageRequest.token(after: "5", call: "TokenHistory"), "history",
        ] {
            await expectRPCError(.invalidArgument, "page_token") {
                try await tsp.control.tokenHistory(.init(digitalCardID: tokens[0], pageToken: token))
            }
        }
        await expectRPCError(.invalidArgument, "page_size") {
            try await tsp.control.tokenHistory(.init(digitalCardID: tokens[0], pageSize: -1))
        }
    }

    /// Each page is one search through `token_events_token` from where the previous page ended.
    @Test func aPageIsReadThroughAnIndex() async throws {
        let (tsp, tokens) = try await Self.tspWithHistory(changes: 3)
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        let plan = try database.query(
            "EXPLAIN QUERY PLAN " + TSPStore.eventPageQuery, [tokens[0], Int64(1), Int64(10)]
        ).map { try $0.text(3) }.joined(separator: "; ")
        #expect(plan.hasPrefix("SEARCH") && plan.contains("INDEX token_events_token"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }
}
