import Foundation
import Testing
import TokenetTestSupport

/// A wallet away while the broker's retention dropped a CARD_STATE meant for it: once back, the wallet asks the TSP
/// for its tokens' states and shows the state the TSP holds, over the three real node processes.
@Suite(.serialized) final class LiveTokenStateSyncTests: @unchecked Sendable {
    @Test(.timeLimit(.minutes(4))) func aStateWhoseMessageTheBrokerDroppedReachesTheWalletWhenItIsBack()
        async throws
    {
        // One message per queue: the issuer's messages that follow the suspension push its CARD_STATE out.
        let (tsp, wallet, issuer, flags) = try await offThePool {
            try LiveProvisioningTests.startNodes(tspPolicy: #"{"notification_max_queued": 1}"#)
        }
        func tokenet(_ arguments: [String]) async throws -> CommandResult {
            let result = try await runTokenet(arguments + flags)
            #expect(result.status == 0, "tokenet \(arguments): \(result.stderr)")
            return result
        }
        _ = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.stdout.contains("is ACTIVE."), "\(accepted.stdout)")
        let cards = try await tokenet(["wallet", "cards", wallet.listen, "--json"])
        let listed = try #require(JSONSerialization.jsonObject(with: Data(cards.stdout.utf8)) as? [String: Any])
        let id = try #require((listed["cards"] as? [[String: Any]])?.first?["digitalCardId"] as? String)

        let walletDirectory = wallet.directory
        let walletListen = wallet.listen
        try await offThePool { wallet.stop() }
        _ = try await tokenet(["tsp", "suspend-token", tsp.listen, id, "--reason", "FRAUD_SUSPECTED"])
        for index in 1...2 {
            _ = try await tokenet(
                ["issuer", "send-message", issuer.listen, id, "--title", "Notice \(index)", "--body", "Hello"])
        }
        try await LiveNodeStopTests.waitFor("the dropped CARD_STATE", in: tsp) {
            $0.contains("notifications dropped by retention") && $0.contains("wallet/")
        }

        let back = try await offThePool {
            try NodeProcess(
                "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: walletListen,
                directory: walletDirectory, extra: ["--tsp", tsp.listen, "--issuer", issuer.listen])
        }
        try await LiveNodeStopTests.waitFor("the wallet's check", in: back) {
            $0.contains("token state brought in line with the TSP")
        }
        let after = try await tokenet(["wallet", "cards", back.listen])
        #expect(after.stdout.contains("SUSPENDED"), "\(after.stdout)")
        // The one CARD_STATE the wallet got is not in its inbox: the state came from the check.
        let inbox = try await tokenet(["wallet", "inbox", back.listen])
        #expect(!inbox.stdout.contains("SUSPENDED"), "\(inbox.stdout)")
        try await offThePool { back.stop() }
    }
}
