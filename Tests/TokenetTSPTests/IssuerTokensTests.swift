import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// `IssuerCardUpdates/GetIssuerTokens`: an issuer node's tokens with their states, in pages, and, asked by id, the
/// stand-in's advice again for a token it approved; no other issuer's.
@Suite struct IssuerTokensTests {
    static func updates(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.IssuerCardUpdates.Client {
        NotificationFlowTests.updates(tsp, as: peer)
    }

    func walk(_ client: TspV1.IssuerCardUpdates.Client, pageSize: Int32) async throws -> [TspV1.IssuerToken] {
        try await WalletTokenStatesTests.pages(of: pageSize) { token in
            let page = try await client.getIssuerTokens(.init(pageSize: pageSize, pageToken: token))
            return (page.tokens, page.nextPageToken)
        }
    }

    @Test func anIssuerNodeListsItsTokensInPagesAndNoOtherIssuers() async throws {
        let tsp = try TSPHarness.make()
        let ids = try await tsp.activeTokens(5)
        let operatorLifecycle = LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1)
        let deleted = try await operatorLifecycle.changeTokenState(LifecycleTests.change(ids[1], .delete))
        let issuer = Self.updates(tsp, as: LifecycleTests.issuer1)
        for size: Int32 in [1, 2, 0] {
            let listed = try await walk(issuer, pageSize: size == 0 ? 500 : size)
            #expect(listed.map(\.digitalCardID) == ids, "page size \(size)")
            #expect(listed[1].tokenState == .deactivated && listed[1].stateVersion == deleted.stateVersion)
            #expect(listed.filter { $0.tokenState == .active }.count == 4)
            #expect(listed.allSatisfy { !$0.decidedByStandIn && $0.standInAdvice == nil })
        }
        // A node that registered no issuer is told to register; a wallet or an operator is not let in.
        await expectRPCError(.failedPrecondition, "has not registered an issuer") {
            try await Self.updates(tsp, as: LifecycleTests.issuer2).getIssuerTokens(.init())
        }
        await expectRPCError(.permissionDenied, "allowed: issuer") {
            try await Self.updates(tsp, as: LifecycleTests.operator1).getIssuerTokens(.init())
        }
        await expectRPCError(.invalidArgument, "page_size") { try await issuer.getIssuerTokens(.init(pageSize: -1)) }
        await expectRPCError(.invalidArgument, "page_token") {
            try await issuer.getIssuerTokens(.init(pageToken: PageRequest.token(after: "01", call: "GetIssuerTokens")))
        }
        await expectRPCError(.invalidArgument, "at most 1000 digital_card_ids") {
            try await issuer.getIssuerTokens(.init(digitalCardIds: Array(repeating: ids[0], count: 1001)))
        }
        let next = try await issuer.getIssuerTokens(.init(pageSize: 1)).nextPageToken
        await expectRPCError(.invalidArgument, "send one or the other") {
            try await issuer.getIssuerTokens(.init(pageToken: next, digitalCardIds: [ids[0]]))
        }
        // Asked by id: in the order asked, each once, an unknown id left out; no advice for the issuer's own.
        let named = try await issuer.getIssuerTokens(.init(digitalCardIds: [ids[3], "DNITHE-none", ids[0], ids[3]]))
        #expect(named.tokens.map(\.digitalCardID) == [ids[3], ids[0]] && named.nextPageToken.isEmpty)
        #expect(named.tokens.allSatisfy { $0.standInAdvice == nil })
    }

    @Test func anotherIssuersTokensAreLeftOut() async throws {
        let tsp = try TSPHarness.make()
        let ids = try await tsp.activeTokens(2)
        // issuer-2 registers an issuer of its own, with other ranges: issuer-1's tokens are none of its.
        _ = try await TspV1.Issuers.Client(TSPHarness.connect(tsp.router, as: LifecycleTests.issuer2)).registerIssuer(
            TspV1.RegisterIssuerRequest(
                issuerID: "bank-b", displayName: "Bank B", binRanges: [TspV1.BinRange(low: "400005", high: "400005")],
                encryptionPublicKeyPem: try FakeIssuer.key.publicKey.pem()))
        let other = Self.updates(tsp, as: LifecycleTests.issuer2)
        #expect(try await other.getIssuerTokens(.init()).tokens.isEmpty)
        #expect(try await other.getIssuerTokens(.init(digitalCardIds: ids)).tokens.isEmpty)
    }

    /// A stand-in decision named by id carries its advice again: the card the token holds now, encrypted to the
    /// issuer's key, and what the TSP kept of the decision. A renewal since shows in it; a decline carries its own,
    /// and an approved token deleted since carries none.
    @Test func aStandInApprovalIsAdvisedAgainWithTheCardItHoldsNow() async throws {
        let tsp = try TSPHarness.make()
        let eligibility = try await tsp.eligibleVisa()
        tsp.issuer.set(.unavailable)
        let approved = try await tsp.digitize(eligibility, risk: TSPHarness.lowRisk)
        #expect(approved.decidedBy == "stand-in" && approved.decision == .approved)
        let declined = try await tsp.digitize(
            try await tsp.checkEligibility(pan: TSPHarness.mastercard), risk: TSPHarness.highRisk)
        #expect(declined.decidedBy == "stand-in" && declined.decision == .declined)
        let original = try #require(StandInAdviceTests.advices(tsp).first?.body)

        let issuer = Self.updates(tsp, as: LifecycleTests.issuer1)
        let listed = try await walk(issuer, pageSize: 10)
        // A declined digitization answers the wallet with no token, but the TSP lists the one it made, deleted.
        #expect(listed.count == 2 && listed.first?.digitalCardID == approved.digitalCardID)
        #expect(listed.map(\.decidedByStandIn) == [true, true])
        #expect(listed.map(\.tokenState) == [.active, .deactivated])

        let named = try await issuer.getIssuerTokens(.init(digitalCardIds: listed.map(\.digitalCardID)))
        #expect(named.tokens.count == 2)
        let advice = try #require(named.tokens.first?.standInAdvice)
        let decline = try #require(named.tokens.last?.standInAdvice)
        #expect(decline.decision == .declined && decline.reason.contains("above the stand-in approval limit"))
        let declinedCard = try CardData(
            json: try JWE.decrypt(try #require(decline.encryptedCardData?.jwe), with: FakeIssuer.key))
        #expect(declinedCard.accountNumber == TSPHarness.mastercard)
        #expect(advice.decision == .approved && advice.reason == original.reason)
        #expect(advice.maskedPAN == original.maskedPAN && advice.tokenLast4 == original.tokenLast4)
        #expect(advice.walletAccountID == original.walletAccountID && advice.inputMethod == original.inputMethod)
        #expect(advice.device?.deviceID == TSPHarness.device.deviceID)
        #expect(advice.decidedAtMs == original.decidedAtMs)
        let sealed = try #require(advice.encryptedCardData?.jwe)
        let card = try CardData(json: try JWE.decrypt(sealed, with: FakeIssuer.key))
        #expect(card.accountNumber == TSPHarness.visa)
        #expect(card.cvv2 == nil)
        #expect(card.expirationDate == CardData.ExpirationDate(month: "12", year: "2030"))
        #expect(tsp.logs.lines.contains { $0.contains("stand-in advice given again to its issuer") })
        #expect(!tsp.logs.lines.joined().contains(TSPHarness.visa))

        // Renewed since: the advice holds the card as it is now.
        _ = try await issuer.renewCard(
            .init(
                digitalCardIds: [approved.digitalCardID],
                cardData: try TSPHarness.encrypted(TSPHarness.card("4111111111111129", month: "08", year: "2031"))))
        let renewed = try await issuer.getIssuerTokens(.init(digitalCardIds: [approved.digitalCardID]))
        let jwe = try #require(renewed.tokens.first?.standInAdvice?.encryptedCardData?.jwe)
        let now = try CardData(json: try JWE.decrypt(jwe, with: FakeIssuer.key))
        #expect(now.accountNumber == "4111111111111129" && now.expirationDate.year == "2031")
        #expect(renewed.tokens.first?.standInAdvice?.maskedPAN == "************1129")

        // Deleted: nothing left to advise.
        _ = try await LifecycleTests.lifecycle(tsp, as: LifecycleTests.operator1).changeTokenState(
            LifecycleTests.change(approved.digitalCardID, .delete))
        let gone = try await issuer.getIssuerTokens(.init(digitalCardIds: [approved.digitalCardID]))
        #expect(gone.tokens.first?.tokenState == .deactivated && gone.tokens.first?.standInAdvice == nil)
    }
}
