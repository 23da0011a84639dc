import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// `TspControl/ListTokens` in pages: every token once, in the order the tokens were made, for all wallet accounts
/// or one.
@Suite struct TokenListingTests {
    /// Seven tokens of one card on seven devices, four for one wallet account and three a second later for another.
    /// The harness clock stands still otherwise, so tokens made in the same millisecond are ordered by their ids.
    static func tspWithTokens() async throws -> (TSPHarness, [String]) {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        var ids: [String] = []
        for index in 0..<7 {
            if index == 4 { tsp.clock.advance(seconds: 1) }
            let account = index < 4 ? "wa-first" : "wa-second"
            let device = CardV1.DeviceInfo(deviceID: "device-\(index)", deviceType: "PHONE", deviceName: "Phone")
            let eligibility = try await tsp.checkEligibility(
                .encryptedCardData(try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa))), account: account,
                device: device)
            ids.append(try await tsp.digitize(eligibility, account: account, device: device).digitalCardID)
        }
        return (tsp, ids)
    }

    /// The listing order of the tokens `tspWithTokens` made.
    static func listingOrder(_ ids: [String]) -> [String] { ids.prefix(4).sorted() + ids.suffix(3).sorted() }

    func walk(_ tsp: TSPHarness, _ request: TspV1.ListTokensRequest) async throws -> (ids: [String], pages: Int) {
        var request = request
        var ids: [String] = []
        var pages = 0
        repeat {
            let page = try await tsp.control.listTokens(request)
            #expect(page.tokens.count <= Int(request.pageSize))
            ids += page.tokens.map(\.digitalCardID)
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages <= 10
        return (ids, pages)
    }

    @Test func pagesListEveryTokenOnceInOrder() async throws {
        let (tsp, ids) = try await Self.tspWithTokens()
        let whole = try await tsp.control.listTokens(TspV1.ListTokensRequest())
        #expect(whole.tokens.map(\.digitalCardID) == Self.listingOrder(ids))
        #expect(whole.nextPageToken.isEmpty)
        for size: Int32 in [1, 2, 3, 7] {
            let (listed, pages) = try await walk(tsp, TspV1.ListTokensRequest(pageSize: size))
            #expect(listed == Self.listingOrder(ids), "page size \(size)")
            #expect(pages == (7 + Int(size) - 1) / Int(size), "page size \(size)")
        }
    }

    @Test func pagesOfOneWalletAccount() async throws {
        let (tsp, ids) = try await Self.tspWithTokens()
        let (first, pages) = try await walk(tsp, TspV1.ListTokensRequest(walletAccountID: "wa-first", pageSize: 3))
        #expect(first == ids.prefix(4).sorted())
        #expect(pages == 2)
        let (second, _) = try await walk(tsp, TspV1.ListTokensRequest(walletAccountID: "wa-second", pageSize: 1))
        #expect(second == ids.suffix(3).sorted())
    }

    @Test func aBadPageIsRefused() async throws {
        let (tsp, _) = try await Self.tspWithTokens()
        await expectRPCError(.invalidArgument, "page_size") {
            try await tsp.control.listTokens(TspV1.ListTokensRequest(pageSize: -5))
        }
        for token in [
            "DC-1", "p1.", PageRequest.token(after: "no colon", call: "ListTokens"),
            PageRequest.token(after: "x:DC-1", call: "ListTokens"),
        ] {
            await expectRPCError(.invalidArgument, "page_token") {
                try await tsp.control.listTokens(TspV1.ListTokensRequest(pageToken: token))
            }
        }
    }

    /// A page token continues the listing it came from: asked with another wallet_account_id (or with none, or
    /// with one after a listing of every account) it is refused, instead of skipping that account's tokens made
    /// before the token's place.
    @Test func aPageTokenContinuesOnlyItsOwnListing() async throws {
        let (tsp, ids) = try await Self.tspWithTokens()
        let first = try await tsp.control.listTokens(TspV1.ListTokensRequest(walletAccountID: "wa-first", pageSize: 3))
        #expect(!first.nextPageToken.isEmpty)
        let every = try await tsp.control.listTokens(TspV1.ListTokensRequest(pageSize: 5))
        for (account, token) in [
            ("wa-second", first.nextPageToken), ("", first.nextPageToken), ("wa-first", every.nextPageToken),
        ] {
            await expectRPCError(.invalidArgument, "wallet_account_id") {
                try await tsp.control.listTokens(
                    TspV1.ListTokensRequest(walletAccountID: account, pageSize: 3, pageToken: token))
            }
        }
        let rest = try await tsp.control.listTokens(
            TspV1.ListTokensRequest(walletAccountID: "wa-first", pageSize: 3, pageToken: first.nextPageToken))
        #expect(rest.tokens.map(\.digitalCardID) == Array(ids.prefix(4).sorted().suffix(1)))
    }

    /// The issuer, wallet node and state filters narrow the listing, alone or together with the account, and page
    /// like the whole listing; a page token goes on only with the filters it was made with.
    @Test func theListingNarrowsToAnIssuerAWalletNodeAndAState() async throws {
        let (tsp, ids) = try await Self.tspWithTokens()
        let operatorLifecycle = TspV1.TokenLifecycle.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .operator, nodeID: "op-1")))
        for id in [ids[1], ids[5]] {
            _ = try await operatorLifecycle.changeTokenState(
                .init(digitalCardID: id, action: .suspend, reasonCode: "FRAUD_SUSPECTED"))
        }
        let order = Self.listingOrder(ids)
        let suspended = order.filter { [ids[1], ids[5]].contains($0) }
        for size: Int32 in [1, 2, 0] {
            let (listed, _) = try await walk(
                tsp, TspV1.ListTokensRequest(pageSize: size == 0 ? 500 : size, state: .suspended))
            #expect(listed == suspended, "page size \(size)")
        }
        let (active, _) = try await walk(tsp, TspV1.ListTokensRequest(pageSize: 2, state: .active))
        #expect(active == order.filter { !suspended.contains($0) })
        let (secondSuspended, _) = try await walk(
            tsp, TspV1.ListTokensRequest(walletAccountID: "wa-second", pageSize: 1, state: .suspended))
        #expect(secondSuspended == [ids[5]])
        let whole = try await tsp.control.listTokens(TspV1.ListTokensRequest())
        let issuer = try #require(whole.tokens.first?.issuerID)
        let node = try #require(whole.tokens.first?.walletNodeID)
        let (ofIssuer, _) = try await walk(tsp, TspV1.ListTokensRequest(pageSize: 3, issuerID: issuer))
        #expect(ofIssuer == order)
        let (ofNode, _) = try await walk(tsp, TspV1.ListTokensRequest(pageSize: 3, walletNodeID: node))
        #expect(ofNode == order)
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest(issuerID: "another-bank")).tokens.isEmpty)
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest(walletNodeID: "wallet-9")).tokens.isEmpty)
        #expect(try await tsp.control.listTokens(TspV1.ListTokensRequest(state: .deactivated)).tokens.isEmpty)

        let first = try await tsp.control.listTokens(TspV1.ListTokensRequest(pageSize: 1, state: .suspended))
        for other in [
            TspV1.ListTokensRequest(pageSize: 1, pageToken: first.nextPageToken),
            TspV1.ListTokensRequest(pageSize: 1, pageToken: first.nextPageToken, state: .active),
            TspV1.ListTokensRequest(pageSize: 1, pageToken: first.nextPageToken, issuerID: issuer, state: .suspended),
        ] {
            await expectRPCError(.invalidArgument, "issuer_id, wallet_node_id and state of that listing") {
                try await tsp.control.listTokens(other)
            }
        }
        await expectRPCError(.invalidArgument, "state 9 is not a token state: give one of TOKEN_STATE_UNSPECIFIED") {
            try await tsp.control.listTokens(TspV1.ListTokensRequest(state: CardV1.TokenState(rawValue: 9)))
        }
    }

    /// Each page is read in the order of an index from where the previous one ended: a page that sorted every
    /// token made listing 200,000 tokens take minutes.
    @Test(arguments: [
        TokenListingFilter(), TokenListingFilter(walletAccountID: "wa-first"),
        TokenListingFilter(issuerID: "tokenet-bank", state: .active),
        TokenListingFilter(walletAccountID: "wa-first", walletNodeID: "wallet-1", state: .suspended),
    ])
    func aPageIsReadThroughAnIndex(_ filter: TokenListingFilter) async throws {
        let (tsp, _) = try await Self.tspWithTokens()
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        let parameters: [any SQLValueConvertible] =
            filter.conditions.values.map { $0 as any SQLValueConvertible } + [Int64(0), "", Int64(10)]
        let plan = try database.query("EXPLAIN QUERY PLAN " + TSPStore.tokenPageQuery(filter), parameters)
            .map { try $0.text(3) }.joined(separator: "; ")
        #expect(plan.contains("USING INDEX"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }
}

/// `TokenLifecycle/GetTokenStates`: a wallet node's own tokens with their states and versions, in pages, and no
/// other node's.
@Suite struct WalletTokenStatesTests {
    func lifecycle(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.TokenLifecycle.Client {
        TspV1.TokenLifecycle.Client(TSPHarness.connect(tsp.router, as: peer))
    }

    func walk(_ client: TspV1.TokenLifecycle.Client, pageSize: Int32) async throws -> [TspV1.WalletTokenState] {
        try await Self.pages(of: pageSize) { token in
            let page = try await client.getTokenStates(.init(pageSize: pageSize, pageToken: token))
            return (page.tokens, page.nextPageToken)
        }
    }

    /// Every item of a listing asked in pages of `pageSize` (`page` answers the page a token names, "" for the
    /// first), each page checked to hold no more than asked; at most 11 pages.
    static func pages<Item>(
        of pageSize: Int32, _ page: (String) async throws -> (items: [Item], next: String)
    ) async throws -> [Item] {
        var token = ""
        var items: [Item] = []
        var pages = 0
        repeat {
            let (some, next) = try await page(token)
            #expect(some.count <= Int(pageSize))
            items += some
            token = next
            pages += 1
        } while !token.isEmpty && pages <= 10
        return items
    }

    @Test func aWalletNodeListsItsOwnTokensWithTheirStatesInPages() async throws {
        let (tsp, ids) = try await TokenListingTests.tspWithTokens()
        let operatorLifecycle = lifecycle(tsp, as: PeerIdentity(role: .operator, nodeID: "op-1"))
        let suspended = try await operatorLifecycle.changeTokenState(
            .init(digitalCardID: ids[2], action: .suspend, reasonCode: "FRAUD_SUSPECTED"))
        let wallet = lifecycle(tsp, as: PeerIdentity(role: .wallet, nodeID: "wallet-1"))
        for size: Int32 in [1, 3, 7, 0] {
            let listed = try await walk(wallet, pageSize: size == 0 ? 500 : size)
            #expect(listed.map(\.digitalCardID) == ids, "page size \(size)")
            let third = listed.first { $0.digitalCardID == ids[2] }
            #expect(third?.tokenState == .suspended && third?.stateVersion == suspended.stateVersion)
            #expect(listed.filter { $0.tokenState == .active }.count == 6)
            #expect(listed.allSatisfy { $0.panLast4 == String(TSPHarness.visa.suffix(4)) })
        }
        // Another wallet node's listing holds none of them, whatever its accounts are called.
        let other = lifecycle(tsp, as: PeerIdentity(role: .wallet, nodeID: "wallet-2"))
        #expect(try await other.getTokenStates(.init()).tokens.isEmpty)
        await expectRPCError(.permissionDenied, "allowed: wallet") {
            try await operatorLifecycle.getTokenStates(.init())
        }
        await expectRPCError(.invalidArgument, "page_size") { try await wallet.getTokenStates(.init(pageSize: -1)) }
        // Asked by id: the caller's own tokens, in the order asked, in one answer; another node's are left out.
        let byID = try await wallet.getTokenStates(.init(digitalCardIds: [ids[3], "DNITHE-none", ids[1], ids[3]]))
        #expect(byID.tokens.map(\.digitalCardID) == [ids[3], ids[1]] && byID.nextPageToken.isEmpty)
        #expect(try await other.getTokenStates(.init(digitalCardIds: [ids[0]])).tokens.isEmpty)
        await expectRPCError(.invalidArgument, "at most 1000 digital_card_ids") {
            try await wallet.getTokenStates(.init(digitalCardIds: Array(repeating: ids[0], count: 1001)))
        }
        // Ids come in one answer, so a page token with them is refused, not ignored.
        let next = try await wallet.getTokenStates(.init(pageSize: 1)).nextPageToken
        await expectRPCError(.invalidArgument, "send one or the other") {
            try await wallet.getTokenStates(.init(pageToken: next, digitalCardIds: [ids[0]]))
        }
        for token in [
            "DNITHE000000000000000001", PageRequest.token(after: "01", call: "GetTokenStates"),
            PageRequest.token(after: "+1", call: "GetTokenStates"),
        ] {
            await expectRPCError(.invalidArgument, "page_token") {
                try await wallet.getTokenStates(.init(pageToken: token))
            }
        }
    }
}
