import Testing
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// `Provisioning.GetTokenIssuer`: a wallet learns the issuer of its own account's tokens, and nothing about others.
@Suite struct TokenIssuerTests {
    static func provisioning(_ tsp: TSPHarness, as peer: PeerIdentity) -> TspV1.Provisioning.Client {
        TspV1.Provisioning.Client(TSPHarness.connect(tsp.router, as: peer))
    }

    @Test func aWalletLearnsTheIssuerOfItsOwnAccountsToken() async throws {
        let tsp = try TSPHarness.make()
        let digitized = try await tsp.digitize(try await tsp.eligibleVisa())
        let answer = try await tsp.wallet.getTokenIssuer(
            .init(digitalCardID: digitized.digitalCardID, walletAccountID: TSPHarness.account))
        #expect(answer.digitalCardID == digitized.digitalCardID)
        #expect(answer.issuerID == "bank-a" && answer.issuerID == digitized.issuerID)
        #expect(answer.issuerNodeID == "issuer-1" && answer.issuerNodeID == digitized.issuerNodeID)
    }

    /// Another account's token, another wallet's token and a token that does not exist get one and the same
    /// answer, so that a wallet cannot probe which tokens exist.
    @Test func anotherAccountsTokenIsRefusedAsNotFoundLikeAnUnknownOne() async throws {
        let tsp = try TSPHarness.make(logLevel: .debug)
        let id = try await tsp.digitize(try await tsp.eligibleVisa()).digitalCardID
        let otherWallet = Self.provisioning(tsp, as: PeerIdentity(role: .wallet, nodeID: "wallet-2"))
        var messages: [String] = []
        for (client, token, account) in [
            (tsp.wallet, id, "account-2"), (otherWallet, id, TSPHarness.account),
            (tsp.wallet, "DNITHE000000000000000099", "account-2"),
        ] {
            do {
                _ = try await client.getTokenIssuer(.init(digitalCardID: token, walletAccountID: account))
                Issue.record("\(token) in \(account) was answered")
            } catch let error as RPCError {
                #expect(error.code == .notFound, "\(error)")
                messages.append(error.message.replacingOccurrences(of: token, with: "TOKEN"))
            }
        }
        #expect(messages.count == 3)
        #expect(Set(messages).count == 1, "\(messages)")
        #expect(!messages.joined().contains("bank-a"))
        // At debug (the node's call log has the refusal at info): the log names the status as the caller saw it.
        #expect(tsp.logs.lines.contains { $0.contains("GetTokenIssuer refused code=NOT_FOUND") }, "\(tsp.logs.lines)")
    }

    @Test func theTokenAndTheAccountAreRequiredAndOnlyWalletsMayAsk() async throws {
        let tsp = try TSPHarness.make()
        await expectRPCError(.invalidArgument, "digital_card_id is required") {
            try await tsp.wallet.getTokenIssuer(.init(walletAccountID: TSPHarness.account))
        }
        await expectRPCError(.invalidArgument, "wallet_account_id is required") {
            try await tsp.wallet.getTokenIssuer(.init(digitalCardID: "DNITHE000000000000000001"))
        }
        let issuer = Self.provisioning(tsp, as: PeerIdentity(role: .issuer, nodeID: "issuer-1"))
        await expectRPCError(.permissionDenied, "(allowed: wallet)") {
            try await issuer.getTokenIssuer(
                .init(digitalCardID: "DNITHE000000000000000001", walletAccountID: TSPHarness.account))
        }
    }
}
