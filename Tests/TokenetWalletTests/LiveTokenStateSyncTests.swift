import Foundation
import Testing
import TokenetTestSupport

/// A wallet away while the broker's retention dropped a CARD_STATE meant for it: once back, the wallet asks the TSP
/// for its tokens' states and shows the state the TSP holds, and sends again the Digitize whose answer it lost, over
/// the three real node processes.
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

        // card-2's Digitize answer is lost: the TSP is stopped while the wallet asks it, and the command gives up.
        // (An issuer stopped while the TSP asks it no longer loses the answer: the TSP keeps room in the wallet's
        // deadline for its stand-in rule.)
        _ = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "5400000010000037", "--exp", "06/30", "--cvc", "456"])
        #expect(tsp.process.send(SIGSTOP))
        let tspProcess = tsp.process
        defer { _ = tspProcess.send(SIGCONT) }
        let lost = try await runTokenet(
            ["wallet", "accept-terms", wallet.listen, "card-2", "--deadline", "10s"] + flags)
        #expect(lost.status != 0, "\(lost.stdout)")
        #expect(tsp.process.send(SIGCONT))

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
        try await LiveNodeStopTests.waitFor("card-2's digitization", in: back) {
            $0.contains("unanswered digitization resumed") && $0.contains("card-2")
        }
        let after = try await tokenet(["wallet", "cards", back.listen])
        #expect(after.stdout.contains("SUSPENDED"), "\(after.stdout)")
        let second = after.stdout.split(separator: "\n").first { $0.hasPrefix("card-2 ") }
        #expect(second?.contains("DIGITIZED") == true && second?.contains("ACTIVE") == true, "\(after.stdout)")
        // The one CARD_STATE the wallet got is not in its inbox: the state came from the check.
        let inbox = try await tokenet(["wallet", "inbox", back.listen])
        #expect(!inbox.stdout.contains("SUSPENDED"), "\(inbox.stdout)")
        // The same check on demand: nothing is left to change.
        let sync = try await tokenet(["wallet", "sync", back.listen])
        #expect(
            sync.stdout.hasPrefix("Checked 2 cards with the TSP: 0 changed; 0 unanswered digitizations resumed.\n"),
            "\(sync.stdout)")
        try await offThePool { back.stop() }
    }
}
