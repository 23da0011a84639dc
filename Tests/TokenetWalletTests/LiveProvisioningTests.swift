import Foundation
import Testing

/// The three real node processes over mutual TLS (issuer-node with the demo fixture), driven by the real `tokenet`
/// CLI as the operator: every provisioning path from the wallet's side, the parties' views, and a wallet restart.
@Suite(.serialized) final class LiveProvisioningTests {
    let tsp: NodeProcess
    let wallet: NodeProcess
    let issuer: NodeProcess
    let flags: [String]

    init() throws {
        let pki = try TestPKI.directory()
        let (tspAddress, walletAddress, issuerAddress) = (
            try freeLoopbackAddress(), try freeLoopbackAddress(), try freeLoopbackAddress()
        )
        tsp = try NodeProcess(
            "tsp-node", role: "tsp", pki: pki, listen: tspAddress, extra: ["--issuer", issuerAddress])
        wallet = try NodeProcess(
            "wallet-node", role: "wallet", pki: pki, listen: walletAddress, extra: ["--tsp", tspAddress])
        issuer = try NodeProcess(
            "issuer-node", role: "issuer", pki: pki, listen: issuerAddress,
            extra: [
                "--tsp", tspAddress, "--wallet", walletAddress, "--fixtures",
                Executables.packageRoot.appendingPathComponent("Tools/fixtures/issuer.json").path,
            ])
        flags = try TestPKI.operatorFlags()
        // The issuer registers with the TSP in the background; its cards are unknown to the TSP until then.
        let deadline = Date().addingTimeInterval(60)
        while !issuer.stderr.contains("registered with the TSP") {
            guard Date() < deadline else { throw LiveTestError("issuer-node did not register: \(issuer.stderr)") }
            usleep(20_000)
        }
    }

    func tokenet(_ arguments: [String]) throws -> CommandResult {
        try runExecutable("tokenet", arguments + flags)
    }

    /// The trace id a command printed as its last line, `(trace 0123456789abcdef)`.
    func traceID(_ result: CommandResult) -> String? {
        guard let line = result.stdout.split(separator: "\n").last, line.hasPrefix("(trace "), line.hasSuffix(")")
        else { return nil }
        return String(line.dropFirst("(trace ".count).dropLast())
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func aVisaCardTypedInIsApprovedAndEveryPartyAgrees() throws {
        let added = try tokenet(
            [
                "wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123",
                "--language", "es",
            ])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.hasPrefix("card-1: Visa card ending 0009 is eligible.\n"), "\(added.stdout)")
        #expect(added.stdout.contains(", es):"))

        let accepted = try tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.hasPrefix("card-1: APPROVED: digital card DNITHE"), "\(accepted.stdout)")
        #expect(accepted.stdout.contains("is ACTIVE."))

        let cards = try json(try tokenet(["wallet", "cards", wallet.listen, "--json"]))
        let card = try #require((cards["cards"] as? [[String: Any]])?.first)
        #expect(card["status"] as? String == "DIGITIZED" && card["state"] as? String == "TOKEN_STATE_ACTIVE")
        let digitalCardID = try #require(card["digitalCardId"] as? String)

        let tokens = try tokenet(["tsp", "tokens", tsp.listen])
        #expect(tokens.stdout.contains(digitalCardID) && tokens.stdout.contains("wallet-account-1"))
        // The TSP's audit trail carries the trace id of the wallet command that made the token.
        let history = try tokenet(["tsp", "history", tsp.listen, digitalCardID])
        #expect(history.stdout.contains("issuer approved"), "\(history.stdout)")
        #expect(history.stdout.contains(try #require(traceID(accepted))), "\(history.stdout)")
        for node in [wallet, tsp, issuer] { #expect(!node.stderr.contains("4761000010000009")) }
    }

    @Test func pushReceiptsAndPushSessionsBecomeActiveTokens() throws {
        let receipt = try json(
            try tokenet(["issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--json"]))
        let payload = try #require((receipt["receipt"] as? [String: Any])?["payload"] as? String)
        let added = try tokenet(["wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard"])
        #expect(added.stdout.hasPrefix("card-1: Mastercard card ending 0037 is eligible."), "\(added.stderr)")
        let reused = try tokenet(["wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard"])
        #expect(reused.status > 64 && reused.stderr.hasPrefix("ERROR: "), "a receipt is single-use: \(reused.stdout)")

        let session = try json(
            try tokenet(["issuer", "push-card", issuer.listen, "card-visa-session", "--mode", "session", "--json"]))
        let sessionID = try #require(session["pushSessionId"] as? String)
        let fromSession = try tokenet(["wallet", "add-card", wallet.listen, "--push-session", sessionID])
        #expect(fromSession.stdout.hasPrefix("card-2: Visa card ending 0023 is eligible."), "\(fromSession.stderr)")

        for ref in ["card-1", "card-2"] {
            let accepted = try tokenet(["wallet", "accept-terms", wallet.listen, ref])
            #expect(accepted.stdout.hasPrefix("\(ref): APPROVED") && accepted.stdout.contains("is ACTIVE."))
        }
    }

    @Test func declinesStepUpsAndIneligibleCards() throws {
        _ = try tokenet(["wallet", "add-card", wallet.listen, "--pan", "2223000010000047", "--exp", "03/30"])
        let declined = try tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(declined.status == 0)
        #expect(declined.stdout.hasPrefix("card-1: DECLINED: the account is under fraud review"), "\(declined.stdout)")

        _ = try tokenet(["wallet", "add-card", wallet.listen, "--pan", "4761000030000054", "--exp", "11/29"])
        let stepUp = try tokenet(["wallet", "accept-terms", wallet.listen, "card-2"])
        #expect(stepUp.stdout.contains("asks for additional authentication") && stepUp.stdout.contains("is INACTIVE."))
        #expect(stepUp.stdout.contains("ID&V otp-sms: OTP_SMS"), "\(stepUp.stdout)")

        let ineligible = try tokenet([
            "wallet", "add-card", wallet.listen, "--pan", "4761000040000078", "--exp", "05/29",
        ])
        #expect(ineligible.status == 0)
        #expect(ineligible.stdout.hasPrefix("Not eligible: card ending 0078: this card is not enabled"))

        let visaReceipt = try tokenet(["wallet", "add-card", wallet.listen, "--receipt", "x", "--scheme", "visa"])
        #expect(visaReceipt.status == 64 + 3)
        #expect(visaReceipt.stderr.contains("Mastercard-only"), "\(visaReceipt.stderr)")

        let cards = try tokenet(["wallet", "cards", wallet.listen])
        #expect(cards.stdout.split(separator: "\n").count == 3, "\(cards.stdout)")
        #expect(cards.stdout.contains("DECLINED") && cards.stdout.contains("INACTIVE"))
    }

    @Test func aRestartedWalletKeepsItsCardsAndAnswersAgainWithoutANewToken() throws {
        _ = try tokenet(["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29"])
        let first = try tokenet(["wallet", "accept-terms", wallet.listen, "card-1", "--json"])
        wallet.stop()
        let restarted = try NodeProcess(
            "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: wallet.listen,
            directory: wallet.directory, extra: ["--tsp", tsp.listen])
        let again = try tokenet(["wallet", "accept-terms", restarted.listen, "card-1", "--json"])
        #expect(again.status == 0 && again.stdout == first.stdout)
        let tokens = try json(try tokenet(["tsp", "tokens", tsp.listen, "--json"]))
        #expect((tokens["tokens"] as? [Any])?.count == 1)
    }
}
