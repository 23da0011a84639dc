import Foundation
import Testing
import TokenetTestSupport

/// An issuer node away while the broker's retention dropped the messages meant for it (the stand-in's advice about a
/// token made meanwhile, the delete of another): once back, the issuer asks the TSP for its tokens and counts each
/// card's as the TSP holds them, over the three real node processes.
@Suite(.serialized) final class LiveIssuerTokenSyncTests: @unchecked Sendable {
    @Test(.timeLimit(.minutes(4))) func tokensWhoseMessagesTheBrokerDroppedAreCountedWhenTheIssuerIsBack()
        async throws
    {
        // One message per queue: the suspension's CARD_STATE pushes out the advice and the delete before it.
        let (tsp, wallet, issuer, flags) = try await offThePool {
            try LiveProvisioningTests.startNodes(tspPolicy: #"{"notification_max_queued": 1}"#)
        }
        defer { wallet.stop() }
        func tokenet(_ arguments: [String]) async throws -> CommandResult {
            let result = try await runTokenet(arguments + flags)
            #expect(result.status == 0, "tokenet \(arguments): \(result.stderr)")
            return result
        }
        func digitalCardIDs() async throws -> [String] {
            let cards = try await tokenet(["wallet", "cards", wallet.listen, "--json"])
            let listed = try #require(JSONSerialization.jsonObject(with: Data(cards.stdout.utf8)) as? [String: Any])
            return (listed["cards"] as? [[String: Any]] ?? []).compactMap { $0["digitalCardId"] as? String }
        }
        _ = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        _ = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        let decided = try #require(try await digitalCardIDs().first)

        let issuerDirectory = issuer.directory
        let issuerListen = issuer.listen
        try await offThePool { issuer.stop() }
        _ = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000082", "--exp", "11/30", "--cvc", "246"])
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-2"])
        #expect(accepted.stdout.contains("is ACTIVE."), "\(accepted.stdout)")
        let standIn = try #require(try await digitalCardIDs().last)
        #expect(standIn != decided)
        _ = try await tokenet(["tsp", "delete-token", tsp.listen, decided, "--reason", "FRAUD_SUSPECTED"])
        _ = try await tokenet(["tsp", "suspend-token", tsp.listen, standIn, "--reason", "FRAUD_SUSPECTED"])
        try await LiveNodeStopTests.waitFor("the dropped advice and delete", in: tsp) {
            $0.contains("notifications dropped by retention") && $0.contains("issuer/")
        }

        let back = try await offThePool {
            try NodeProcess(
                "issuer-node", role: "issuer", pki: try TestPKI.directory(), listen: issuerListen,
                directory: issuerDirectory,
                extra: [
                    "--tsp", tsp.listen, "--wallet", wallet.listen, "--fixtures",
                    Executables.packageRoot.appendingPathComponent("Tools/fixtures/issuer.json").path,
                ])
        }
        defer { back.stop() }
        try await LiveNodeStopTests.waitFor("the issuer's check", in: back) {
            $0.contains("the issuer's tokens checked with the TSP") && $0.contains("stand_in_recorded=1")
        }
        #expect(back.stderr.contains("deleted=1"), "\(back.stderr)")
        #expect(
            back.stderr.contains("digital_card_id=\(standIn) card=card-visa-standin"), "\(back.stderr)")
        #expect(!back.stderr.contains("4761000010000082"), "\(back.stderr)")

        let cards = try await tokenet(["issuer", "cards", back.listen, "--json"])
        let listed = try #require(JSONSerialization.jsonObject(with: Data(cards.stdout.utf8)) as? [String: Any])
        let byCard = Dictionary(
            uniqueKeysWithValues: (listed["cards"] as? [[String: Any]] ?? []).map {
                ($0["cardId"] as? String ?? "", $0["digitalCardIds"] as? [String] ?? [])
            })
        #expect(byCard["card-visa-standin"] == [standIn], "\(cards.stdout)")
        #expect(byCard["card-visa-approve"] == [], "\(cards.stdout)")
        // The same check on demand: nothing is left to record.
        let sync = try await tokenet(["issuer", "sync", back.listen])
        #expect(
            sync.stdout.hasPrefix(
                "Checked 2 tokens with the TSP: 0 decided by its stand-in and 0 deleted recorded now.\n"),
            "\(sync.stdout)")
        // A card-wide change reaches the stand-in token (suspended by the TSP, the issuer may still delete it).
        let deleted = try await tokenet(
            ["issuer", "delete-tokens", back.listen, "--card", "card-visa-standin", "--reason", "LOST_CARD"])
        #expect(deleted.stdout.contains(standIn), "\(deleted.stdout)")
    }

    /// A card blocked as stolen while the TSP is down: the block stands at once, and its token is suspended when
    /// the TSP is back and the issuer's stream to it opens again, without the operator running anything more.
    @Test(.timeLimit(.minutes(4))) func aBlockMadeWhileTheTSPIsDownSuspendsTheTokenOnceItIsBack() async throws {
        let (tsp, wallet, issuer, flags) = try await offThePool { try LiveProvisioningTests.startNodes() }
        defer {
            wallet.stop()
            issuer.stop()
        }
        func tokenet(_ arguments: [String], status: Int32 = 0) async throws -> CommandResult {
            let result = try await runTokenet(arguments + flags)
            #expect(result.status == status, "tokenet \(arguments): \(result.stdout)\(result.stderr)")
            return result
        }
        _ = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.stdout.contains("is ACTIVE."), "\(accepted.stdout)")

        let (tspDirectory, tspListen) = (tsp.directory, tsp.listen)
        try await offThePool { tsp.stop() }
        let blocked = try await runTokenet(
            ["issuer", "block-card", issuer.listen, "card-visa-approve", "--reason", "STOLEN"] + flags)
        #expect(blocked.status == 78, "\(blocked.stdout)\(blocked.stderr)")  // UNAVAILABLE: 64 + 14
        #expect(
            blocked.stderr.contains(
                "card card-visa-approve is blocked (STOLEN), and the change of its tokens (suspend) is pending"),
            "\(blocked.stderr)")
        let pending = try await tokenet(["issuer", "cards", issuer.listen])
        #expect(pending.stdout.contains("blocked (STOLEN); tokens suspend pending"), "\(pending.stdout)")

        let back = try await offThePool {
            try NodeProcess(
                "tsp-node", role: "tsp", pki: try TestPKI.directory(), listen: tspListen, directory: tspDirectory,
                extra: ["--issuer", issuer.listen])
        }
        defer { back.stop() }
        try await LiveNodeStopTests.waitFor("the pending suspension", in: issuer) {
            $0.contains("pending change of a card's tokens made") && $0.contains("card=card-visa-approve")
        }
        let tokens = try await tokenet(["tsp", "tokens", back.listen, "--json"])
        let listed = try #require(JSONSerialization.jsonObject(with: Data(tokens.stdout.utf8)) as? [String: Any])
        let states = (listed["tokens"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
        #expect(states == ["TOKEN_STATE_SUSPENDED"], "\(tokens.stdout)")
        let settled = try await tokenet(["issuer", "cards", issuer.listen])
        #expect(settled.stdout.contains("blocked (STOLEN)"), "\(settled.stdout)")
        #expect(!settled.stdout.contains("pending"), "\(settled.stdout)")
        // Blocked again by an operator who did not see it done: the token is SUSPENDED already, as wanted.
        let again = try await tokenet([
            "issuer", "block-card", issuer.listen, "card-visa-approve", "--reason", "STOLEN",
        ])
        #expect(again.stdout.contains("already SUSPENDED"), "\(again.stdout)")
    }
}
