import Foundation
import Testing
import TokenetRPC
import TokenetStorage
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// In-app activation (`IssuerIdv.ActivateDigitalCard`) with a fake authentication service: the access token must be
/// genuine and current, and its user must own the account the issuer named for the token's card.
@Suite struct ActivateDigitalCardTests {
    /// A TSP with the fake verifier, "user-1" owning the fake issuer's account "acct-1", and a step-up token.
    static func steppedUp(accountID: String = "acct-1") async throws -> (TSPHarness, FakeAccessTokens, String) {
        let tokens = FakeAccessTokens()
        tokens.own("user-1", "acct-1")
        let issuer = FakeIssuer()
        issuer.set(accountID: accountID)
        let tsp = try TSPHarness.make(issuer: issuer, accessTokens: tokens)
        let card = try await IdvTests.steppedUp(tsp)
        return (tsp, tokens, card)
    }

    func activate(_ tsp: TSPHarness, _ card: String, _ token: String) async throws
        -> TspV1.ActivateDigitalCardResponse
    {
        try await tsp.issuerIdv.activateDigitalCard(
            TspV1.ActivateDigitalCardRequest(digitalCardID: card, accessToken: token))
    }

    func state(_ tsp: TSPHarness, _ card: String) async throws -> CardV1.TokenState {
        try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card)).token?.state ?? .unspecified
    }

    @Test func theTokensOwnerActivatesItAndAgainIsHarmless() async throws {
        let (tsp, tokens, card) = try await Self.steppedUp()
        let token = tokens.mint(user: "user-1", expiresAt: tsp.clock.now.addingTimeInterval(300))
        let first = try await activate(tsp, card, token)
        // Made (version 1), left INACTIVE by the issuer's step-up decision (2), activated (3): the version goes with
        // the state to the wallet, and a repeat changes neither.
        #expect(first.tokenState == .active && first.changed && first.stateVersion == 3)
        let again = try await activate(tsp, card, token)
        #expect(again.tokenState == .active && !again.changed && again.stateVersion == 3)
        let history = try await tsp.control.tokenHistory(TspV1.TokenHistoryRequest(digitalCardID: card))
        #expect(history.events.last?.actor == "issuer-app:bank-a/user-1")
        #expect(history.events.last?.reason.hasPrefix("in-app ID&V") == true)
        #expect(history.events.filter { $0.toState == .active }.count == 1)
        #expect(!tsp.logs.lines.contains { $0.contains(token) })
    }

    @Test func forgedAndExpiredAccessTokensAreUnauthenticated() async throws {
        let (tsp, tokens, card) = try await Self.steppedUp()
        await expectRPCError(.unauthenticated, "signature") { try await activate(tsp, card, "at-forged") }
        let token = tokens.mint(user: "user-1", expiresAt: tsp.clock.now.addingTimeInterval(60))
        tsp.clock.advance(seconds: 60)
        await expectRPCError(.unauthenticated, "expired") { try await activate(tsp, card, token) }
        #expect(try await state(tsp, card) == .inactive)
    }

    @Test func anotherUserOrIssuerIsPermissionDenied() async throws {
        let (tsp, tokens, card) = try await Self.steppedUp()
        tokens.own("user-2", "acct-2")
        let later = tsp.clock.now.addingTimeInterval(300)
        await expectRPCError(.permissionDenied, "user \"user-2\" does not own the account") {
            try await activate(tsp, card, tokens.mint(user: "user-2", expiresAt: later))
        }
        await expectRPCError(.permissionDenied, "issued by \"bank-b\"") {
            try await activate(tsp, card, tokens.mint(issuer: "bank-b", user: "user-1", expiresAt: later))
        }
        let otherNode = TspV1.IssuerIdv.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .issuer, nodeID: "issuer-2")))
        await expectRPCError(.permissionDenied, "another issuer") {
            try await otherNode.activateDigitalCard(
                .init(digitalCardID: card, accessToken: tokens.mint(user: "user-1", expiresAt: later)))
        }
        #expect(try await state(tsp, card) == .inactive)
    }

    @Test func aDeactivatedTokenIsAFailedPrecondition() async throws {
        let (tsp, tokens, card) = try await Self.steppedUp()
        let database = try Database.open(path: tsp.directory + "/tsp.sqlite")
        _ = try database.execute("UPDATE tokens SET state = 'DEACTIVATED' WHERE digital_card_id = ?", [card])
        await expectRPCError(.failedPrecondition, "DEACTIVATED") {
            try await activate(tsp, card, tokens.mint(user: "user-1", expiresAt: tsp.clock.now.addingTimeInterval(60)))
        }
    }

    @Test func aTokenWithoutTheIssuersAccountCannotBeActivatedInApp() async throws {
        let (tsp, tokens, card) = try await Self.steppedUp(accountID: "")
        await expectRPCError(.failedPrecondition, "did not name the account") {
            try await activate(tsp, card, tokens.mint(user: "user-1", expiresAt: tsp.clock.now.addingTimeInterval(60)))
        }
    }

    @Test func theAuthenticationServicesVerifierRefusesWhatItDidNotIssue() async throws {
        let tsp = try TSPHarness.make()
        let card = try await IdvTests.steppedUp(tsp)
        await expectRPCError(.unauthenticated, "not a Tokenet access token") {
            try await activate(tsp, card, "any-token")
        }
        await expectRPCError(.invalidArgument, "access_token is required") { try await activate(tsp, card, "") }
        await expectRPCError(.invalidArgument, "digital_card_id") { try await activate(tsp, "", "t") }
        #expect(try await state(tsp, card) == .inactive)
        let walletCaller = TspV1.IssuerIdv.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")))
        await expectRPCError(.permissionDenied, "allowed: issuer") {
            try await walletCaller.activateDigitalCard(.init(digitalCardID: card, accessToken: "t"))
        }
    }

    @Test func theIssuersAccountIsKeptWithTheToken() async throws {
        let (tsp, _, card) = try await Self.steppedUp()
        let store = try TSPStore.open(
            path: tsp.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: tsp.directory))
        #expect(try store.token(card)?.issuerAccountID == "acct-1")
    }
}
