import Foundation
import Testing
import TokenetTestSupport

/// The wallet account the person picks with `tokenet wallet use-account`: add-card adds cards to it, so a receipt
/// the issuer pushed to that account is redeemed there, and a restarted wallet-node keeps the choice.
extension LiveProvisioningTests {
    @Test func addCardUsesTheAccountMadeActiveAlsoAfterARestart() async throws {
        let switched = try await tokenet(["wallet", "use-account", wallet.listen, "wallet-account-2"])
        #expect(switched.status == 0, "\(switched.stderr)")
        let pushed = try json(
            try await tokenet([
                "issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--wallet-account",
                "wallet-account-2", "--json",
            ]))
        let payload = try #require((pushed["receipt"] as? [String: Any])?["payload"] as? String)
        let added = try await tokenet([
            "wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(
            added.stdout.hasPrefix(
                "card-1: Mastercard card ending 0037 is eligible.\nWallet account: wallet-account-2.\n"),
            "\(added.stdout)")
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.stdout.hasPrefix("card-1: APPROVED"), "\(accepted.stdout)\(accepted.stderr)")
        let tokens = try json(
            try await tokenet(["tsp", "tokens", tsp.listen, "--wallet-account", "wallet-account-2", "--json"]))
        #expect((tokens["tokens"] as? [Any])?.count == 1, "\(tokens)")

        let (wallet, tsp, issuer) = (self.wallet, self.tsp, self.issuer)
        let restarted = try await offThePool {
            wallet.stop()
            return try NodeProcess(
                "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: wallet.listen,
                directory: wallet.directory, extra: ["--tsp", tsp.listen, "--issuer", issuer.listen])
        }
        #expect(restarted.stderr.contains("wallet_account=wallet-account-2"), "\(restarted.stderr)")
        let typed = try await tokenet([
            "wallet", "add-card", restarted.listen, "--pan", "4761000010000009", "--exp", "12/29",
        ])
        #expect(typed.stdout.contains("\nWallet account: wallet-account-2.\n"), "\(typed.stdout)\(typed.stderr)")
        let cards = try json(try await tokenet(["wallet", "cards", restarted.listen, "--json"]))
        let accounts = (cards["cards"] as? [[String: Any]])?.map { $0["walletAccountId"] as? String }
        #expect(accounts == ["wallet-account-2", "wallet-account-2"], "\(cards)")
    }
}
