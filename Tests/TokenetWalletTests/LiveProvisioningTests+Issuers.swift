import Foundation
import Testing
import TokenetStorage
import TokenetTestSupport

/// A card the wallet stored before it recorded issuers, after an upgrade: the restarted wallet-node asks the TSP
/// whose token it is, in the background, and shows it to that issuer's app again.
extension LiveProvisioningTests {
    @Test func aCardStoredWithoutItsIssuerReachesItsIssuerAppOnceTheWalletAskedTheTSP() async throws {
        _ = try await tokenet([
            "wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123",
        ])
        let accepted = try json(try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1", "--json"]))
        let digitalCardID = try #require((accepted["card"] as? [String: Any])?["digitalCardId"] as? String)
        _ = try await appViewRow(digitalCardID, state: "TOKEN_STATE_ACTIVE")

        // The card as a wallet stored it before migration 4: no issuer.
        let (wallet, tsp, issuer) = (self.wallet, self.tsp, self.issuer)
        let restarted = try await offThePool {
            wallet.stop()
            let database = try Database.open(path: wallet.directory.file("data/wallet.sqlite"))
            _ = try database.execute("UPDATE cards SET issuer_id = NULL, issuer_node_id = NULL")
            try database.close()
            return try NodeProcess(
                "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: wallet.listen,
                directory: wallet.directory, extra: ["--tsp", tsp.listen, "--issuer", issuer.listen])
        }

        // The issuer app pulls from the restarted wallet, and hears of the card once its issuer is recorded.
        let deadline = Date().addingTimeInterval(60)
        var view: [String: Any] = [:]
        while Date() < deadline {
            view = try json(try await tokenet(["issuer", "app-view", issuer.listen, "--json"]))
            let rows = view["cards"] as? [[String: Any]] ?? []
            if (view["pulls"] as? Int ?? 0) >= 2, view["listening"] as? Bool == true,
                rows.contains(where: { $0["digitalCardId"] as? String == digitalCardID })
            {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let rows = view["cards"] as? [[String: Any]] ?? []
        #expect((view["pulls"] as? Int ?? 0) >= 2, "\(view)")
        #expect(rows.contains { $0["digitalCardId"] as? String == digitalCardID }, "\(view)")

        let cards = try json(try await tokenet(["wallet", "cards", restarted.listen, "--json"]))
        #expect((cards["cards"] as? [[String: Any]])?.first?["issuerId"] as? String == "tokenet-bank", "\(cards)")
        #expect(restarted.stderr.contains("resolved=1 remaining=0"), "\(restarted.stderr)")
        #expect(!restarted.stderr.contains("4761000010000009"))
    }
}
