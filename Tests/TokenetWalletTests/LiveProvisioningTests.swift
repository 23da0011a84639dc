import Foundation
import Testing
import TokenetTestSupport

/// The three real node processes over mutual TLS (issuer-node with the demo fixture), driven by the real `tokenet`
/// CLI as the operator: every provisioning path from the wallet's side, the parties' views, and a wallet restart.
@Suite(.serialized) final class LiveProvisioningTests: @unchecked Sendable {
    let tsp: NodeProcess
    let wallet: NodeProcess
    let issuer: NodeProcess
    let flags: [String]

    init(tspPolicy: String? = nil, walletConfiguration: String? = nil) async throws {
        (tsp, wallet, issuer, flags) = try await offThePool {
            try Self.startNodes(tspPolicy: tspPolicy, walletConfiguration: walletConfiguration)
        }
    }

    /// Starts the three nodes, each knowing every peer's address, and waits until the issuer registered.
    /// `tspPolicy` and `walletConfiguration` are written to the TSP's and the wallet's data directories first.
    static func startNodes(
        tspPolicy: String? = nil, walletConfiguration: String? = nil
    ) throws -> (NodeProcess, NodeProcess, NodeProcess, [String]) {
        // The addresses are picked before the nodes bind them, so a process of another test may take one in
        // between; that attempt stops its nodes and the next one picks new addresses.
        var attempt = 1
        while true {
            do {
                return try startNodesOnce(tspPolicy: tspPolicy, walletConfiguration: walletConfiguration)
            } catch let error as LiveTestError where attempt < 3 && error.description.contains("Address already in use")
            {
                attempt += 1
            }
        }
    }

    private static func startNodesOnce(
        tspPolicy: String?, walletConfiguration: String?
    ) throws -> (NodeProcess, NodeProcess, NodeProcess, [String]) {
        let pki = try TestPKI.directory()
        let (tspAddress, walletAddress, issuerAddress) = (
            try freeLoopbackAddress(), try freeLoopbackAddress(), try freeLoopbackAddress()
        )
        let tsp = try NodeProcess(
            "tsp-node", role: "tsp", pki: pki, listen: tspAddress,
            directory: try ScratchDirectory(data: ["tsp-policy.json": tspPolicy]), extra: ["--issuer", issuerAddress])
        let wallet = try NodeProcess(
            "wallet-node", role: "wallet", pki: pki, listen: walletAddress,
            directory: try ScratchDirectory(data: ["wallet.json": walletConfiguration]),
            extra: ["--tsp", tspAddress, "--issuer", issuerAddress])
        let issuer = try NodeProcess(
            "issuer-node", role: "issuer", pki: pki, listen: issuerAddress,
            extra: [
                "--tsp", tspAddress, "--wallet", walletAddress, "--fixtures",
                Executables.packageRoot.appendingPathComponent("Tools/fixtures/issuer.json").path,
            ])
        // The issuer registers with the TSP in the background; its cards are unknown to the TSP until then.
        let deadline = Date().addingTimeInterval(60)
        while !issuer.stderr.contains("registered with the TSP") {
            guard Date() < deadline else { throw LiveTestError("issuer-node did not register: \(issuer.stderr)") }
            usleep(20_000)
        }
        return (tsp, wallet, issuer, try TestPKI.operatorFlags())
    }

    func tokenet(_ arguments: [String]) async throws -> CommandResult {
        let arguments = arguments + flags
        return try await offThePool { try runExecutable("tokenet", arguments) }
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

    @Test func aVisaCardTypedInIsApprovedAndEveryPartyAgrees() async throws {
        let added = try await tokenet(
            [
                "wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123",
                "--language", "es",
            ])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.hasPrefix("card-1: Visa card ending 0009 is eligible.\n"), "\(added.stdout)")
        #expect(added.stdout.contains(", es):"))
        // The eligibility's end is told, as a time to accept the T&C by (it was not, and a late accept-terms failed).
        let acceptBy = try #require(added.stdout.split(separator: "\n").first { $0.hasPrefix("Accept them by ") })
        #expect(
            acceptBy.hasSuffix("Z with: tokenet wallet accept-terms \(wallet.listen) card-1")
                && acceptBy.contains("T"),
            "\(added.stdout)")

        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.hasPrefix("card-1: APPROVED: digital card DNITHE"), "\(accepted.stdout)")
        #expect(accepted.stdout.contains("is ACTIVE."))

        let cards = try json(try await tokenet(["wallet", "cards", wallet.listen, "--json"]))
        let card = try #require((cards["cards"] as? [[String: Any]])?.first)
        #expect(card["status"] as? String == "DIGITIZED" && card["state"] as? String == "TOKEN_STATE_ACTIVE")
        #expect(card["issuerId"] as? String == "tokenet-bank", "\(card)")
        let digitalCardID = try #require(card["digitalCardId"] as? String)
        // The text listing names the card's issuer in its own column, as the TSP named it at digitization.
        let listed = try await tokenet(["wallet", "cards", wallet.listen]).stdout.split(separator: "\n")
        #expect(listed.first?.contains("SCHEME  ISSUER ") == true, "\(listed)")
        #expect(listed.dropFirst().first?.contains(" Visa    tokenet-bank ") == true, "\(listed)")

        let tokens = try await tokenet(["tsp", "tokens", tsp.listen])
        #expect(tokens.stdout.contains(digitalCardID) && tokens.stdout.contains("wallet-account-1"))
        // One Payment Account Reference for the card, as the wallet, the TSP and the issuer each hold it.
        let par = try #require(card["paymentAccountReference"] as? String)
        #expect(par.count == 29 && par.hasPrefix("V001"), "\(card)")
        #expect(tokens.stdout.contains(par), "\(tokens.stdout)")
        #expect(issuer.stderr.contains("par=\(par)"), "\(issuer.stderr)")
        // The TSP's audit trail carries the trace id of the wallet command that made the token.
        let history = try await tokenet(["tsp", "history", tsp.listen, digitalCardID])
        #expect(history.stdout.contains("issuer approved"), "\(history.stdout)")
        let trace = try #require(traceID(accepted))
        #expect(history.stdout.contains(trace), "\(history.stdout)")
        // The card's first payment keys, which the wallet asks for in the background once the token is active,
        // belong to the same flow: its log line carries the command's trace id.
        let deadline = Date().addingTimeInterval(60)
        var replenished: Substring?
        while replenished == nil, Date() < deadline {
            replenished = wallet.stderr.split(separator: "\n").first { $0.contains("payment keys replenished") }
            if replenished == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(replenished?.contains("trace_id=\(trace)") == true, "\(wallet.stderr)")
        // Asked again once the token is deleted, the answer is the digitization's, with what became of it: "APPROVED:
        // … is DEACTIVATED" read as a new approval.
        let deleted = try await tokenet(["wallet", "delete", wallet.listen, "card-1", "--reason", "USER_REQUEST"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let again = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(
            again.stdout.hasPrefix("card-1: was APPROVED when it was digitized; digital card \(digitalCardID)"),
            "\(again.stdout)")
        #expect(again.stdout.contains("is now DEACTIVATED: it was deleted; add the card again"), "\(again.stdout)")
        for node in [wallet, tsp, issuer] { #expect(!node.stderr.contains("4761000010000009")) }
    }

    @Test func pushReceiptsAndPushSessionsBecomeActiveTokens() async throws {
        // A receipt pushed to another wallet account is refused to this wallet's account (wallet-account-1).
        let elsewhere = try json(
            try await tokenet([
                "issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--wallet-account",
                "nope", "--json",
            ]))
        let foreign = try #require((elsewhere["receipt"] as? [String: Any])?["payload"] as? String)
        let refused = try await tokenet([
            "wallet", "add-card", wallet.listen, "--receipt", foreign, "--scheme", "mastercard",
        ])
        #expect(refused.status == 64 + 7, "\(refused.stdout)")
        #expect(refused.stderr.contains("PERMISSION_DENIED"), "\(refused.stderr)")
        #expect(refused.stderr.contains("another wallet account, not \"wallet-account-1\""), "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "and stays unused: add the card from the wallet account the issuer pushed it to, or ask the issuer to "
                    + "push the card to \"wallet-account-1\"; to add it from another of this wallet's accounts, make "
                    + "that account active (tokenet wallet use-account) and add the card again"),
            "\(refused.stderr)")
        for node in [wallet, tsp, issuer] { #expect(!node.stderr.contains("5400000010000037")) }
        #expect(!refused.stderr.contains("5400000010000037"))
        // Bound to an account name alone, a receipt says that any wallet node's account of that name can redeem it.
        let named = try await tokenet([
            "issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--wallet-account", "nope",
        ])
        #expect(
            named.stdout.contains(
                "Any wallet node with an account named nope can redeem it; --wallet-node ID binds it to one wallet node."
            ),
            "\(named.stdout)")

        let receipt = try json(
            try await tokenet(["issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--json"]))
        let payload = try #require((receipt["receipt"] as? [String: Any])?["payload"] as? String)
        let added = try await tokenet([
            "wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard",
        ])
        #expect(added.stdout.hasPrefix("card-1: Mastercard card ending 0037 is eligible."), "\(added.stderr)")
        let reused = try await tokenet([
            "wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard",
        ])
        #expect(reused.status > 64 && reused.stderr.hasPrefix("ERROR: "), "a receipt is single-use: \(reused.stdout)")

        let session = try json(
            try await tokenet([
                "issuer", "push-card", issuer.listen, "card-visa-session", "--mode", "session", "--json",
            ]))
        let sessionID = try #require(session["pushSessionId"] as? String)
        let fromSession = try await tokenet(["wallet", "add-card", wallet.listen, "--push-session", sessionID])
        #expect(fromSession.stdout.hasPrefix("card-2: Visa card ending 0023 is eligible."), "\(fromSession.stderr)")

        for ref in ["card-1", "card-2"] {
            let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, ref])
            #expect(accepted.stdout.hasPrefix("\(ref): APPROVED") && accepted.stdout.contains("is ACTIVE."))
        }
    }

    /// The operator rotates the TSP's card-data key and forgets the one the issuer registered with: a card typed
    /// into the wallet and one the issuer pushes still reach the TSP, each encrypted to the new key, where the
    /// issuer's push kept the key of its registration and was refused once that key was forgotten.
    @Test func aRotatedKeyIsFollowedByTheWalletAndTheIssuer() async throws {
        let rotated = try await tokenet(["tsp", "rotate-key", tsp.listen, "--json"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let old = try #require(try json(rotated)["retiredKeyIdentifier"] as? String)
        let forgotten = try await tokenet(["tsp", "forget-key", tsp.listen, old])
        #expect(forgotten.status == 0, "\(forgotten.stderr)")

        let typed = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        #expect(typed.stdout.hasPrefix("card-1: Visa card ending 0009 is eligible."), "\(typed.stderr)")
        let push = try await tokenet([
            "issuer", "push-card", issuer.listen, "card-mc-receipt", "--mode", "receipt", "--json",
        ])
        #expect(push.status == 0, "\(push.stderr)")
        let payload = try #require((try json(push)["receipt"] as? [String: Any])?["payload"] as? String)
        let pushed = try await tokenet([
            "wallet", "add-card", wallet.listen, "--receipt", payload, "--scheme", "mastercard",
        ])
        #expect(pushed.stdout.hasPrefix("card-2: Mastercard card ending 0037 is eligible."), "\(pushed.stderr)")
        #expect(!tsp.stderr.contains("no decryption key has kid"), "\(tsp.stderr)")
    }

    @Test func declinesStepUpsAndIneligibleCards() async throws {
        _ = try await tokenet(["wallet", "add-card", wallet.listen, "--pan", "2223000010000047", "--exp", "03/30"])
        let declined = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(declined.status == 0)
        #expect(declined.stdout.hasPrefix("card-1: DECLINED: the account is under fraud review"), "\(declined.stdout)")

        _ = try await tokenet(["wallet", "add-card", wallet.listen, "--pan", "4761000030000054", "--exp", "11/29"])
        let stepUp = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-2"])
        #expect(stepUp.stdout.contains("asks for additional authentication") && stepUp.stdout.contains("is INACTIVE."))
        #expect(stepUp.stdout.contains("ID&V otp-sms: OTP_SMS"), "\(stepUp.stdout)")
        // The next command, as add-card names accept-terms.
        #expect(
            stepUp.stdout.contains("Choose one with: tokenet wallet select-method \(wallet.listen) card-2 METHOD_ID"),
            "\(stepUp.stdout)")

        let ineligible = try await tokenet([
            "wallet", "add-card", wallet.listen, "--pan", "4761000040000078", "--exp", "05/29",
        ])
        #expect(ineligible.status == 0)
        #expect(ineligible.stdout.hasPrefix("Not eligible: Visa card ending 0078: this card is not enabled"))

        let visaReceipt = try await tokenet(["wallet", "add-card", wallet.listen, "--receipt", "x", "--scheme", "visa"])
        #expect(visaReceipt.status == 64 + 3)
        #expect(visaReceipt.stderr.contains("Mastercard-only"), "\(visaReceipt.stderr)")

        let cards = try await tokenet(["wallet", "cards", wallet.listen])
        // The header, two cards, and under them why the declined one was declined.
        let lines = cards.stdout.split(separator: "\n")
        #expect(lines.count == 4, "\(cards.stdout)")
        #expect(cards.stdout.contains("DECLINED") && cards.stdout.contains("INACTIVE"))
        #expect(lines.last?.hasPrefix("card-1: the account is under fraud review") == true, "\(cards.stdout)")
    }

    /// Adds the fixture's step-up card and accepts its T&C; returns its digital card id.
    func steppedUpCard() async throws -> String {
        _ = try await tokenet(["wallet", "add-card", wallet.listen, "--pan", "4761000030000054", "--exp", "11/29"])
        let stepUp = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(stepUp.stdout.contains("is INACTIVE."), "\(stepUp.stdout)")
        let cards = try json(try await tokenet(["wallet", "cards", wallet.listen, "--json"]))
        return try #require((cards["cards"] as? [[String: Any]])?.first?["digitalCardId"] as? String)
    }

    @Test func aStepUpIsActivatedWithTheCodeFromTheIssuersOutbox() async throws {
        let digitalCardID = try await steppedUpCard()
        // The issuer app, listening to the wallet, sees the new token (by the event or by its pull at connection).
        _ = try await appViewRow(digitalCardID, state: "TOKEN_STATE_INACTIVE")
        let selected = try await tokenet(["wallet", "select-method", wallet.listen, "card-1", "otp-sms"])
        #expect(selected.status == 0, "\(selected.stderr)")
        #expect(selected.stdout.hasPrefix("card-1: otp-sms (OTP_SMS): code sent to ***-***-"), "\(selected.stdout)")
        #expect(selected.stdout.contains("3 tries left"))
        let again = try await tokenet(["wallet", "select-method", wallet.listen, "card-1", "otp-sms"])
        #expect(again.stdout.contains("no new code sent"), "\(again.stdout)")

        let outbox = try json(try await tokenet(["issuer", "outbox", issuer.listen, "--json"]))
        let messages = try #require(outbox["messages"] as? [[String: Any]])
        #expect(messages.count == 1)
        #expect(messages.first?["channel"] as? String == "sms")
        #expect(messages.first?["digitalCardId"] as? String == digitalCardID)
        let text = try #require(messages.first?["text"] as? String)
        let code = String(try #require(text.firstMatch(of: /is (\d{6})\./)).output.1)
        #expect(text.contains("ending 0054"))

        let wrong = try await tokenet([
            "wallet", "submit-otp", wallet.listen, "card-1", code == "000000" ? "111111" : "000000",
        ])
        #expect(wrong.status == 0, "\(wrong.stderr)")
        #expect(wrong.stdout.hasPrefix("card-1: INCORRECT_CODE (2 tries left); token"), "\(wrong.stdout)")
        #expect(wrong.stdout.contains("is INACTIVE."))
        let right = try await tokenet(["wallet", "submit-otp", wallet.listen, "card-1", code])
        #expect(right.stdout.hasPrefix("card-1: SUCCESS; token \(digitalCardID) is ACTIVE."), "\(right.stdout)")
        let row = try await appViewRow(digitalCardID, state: "TOKEN_STATE_ACTIVE")
        // Two messages tell the app: the wallet's token event and the TSP's CARD_STATE for the activation. They race,
        // and which one the row names depends on their order.
        let updatedBy = row["updatedBy"] as? String
        #expect(["WALLET_EVENT_KIND_TOKEN_STATUS_CHANGED", "CARD_STATE"].contains(updatedBy), "\(row)")

        let cards = try await tokenet(["wallet", "cards", wallet.listen])
        #expect(cards.stdout.contains("ACTIVE") && !cards.stdout.contains("INACTIVE"), "\(cards.stdout)")
        let history = try await tokenet(["tsp", "history", tsp.listen, digitalCardID])
        #expect(history.stdout.contains("one-time code verified (method otp-sms)"), "\(history.stdout)")
        for node in [wallet, tsp, issuer] { #expect(!mentionsAsNumber(node.stderr, code)) }
    }

    @Test func aStepUpIsActivatedByTheIssuersCallCentre() async throws {
        let digitalCardID = try await steppedUpCard()
        let selected = try await tokenet(["wallet", "select-method", wallet.listen, "card-1", "call-center"])
        #expect(selected.stdout.contains("its operator activates the token"), "\(selected.stdout) \(selected.stderr)")
        let activated = try await tokenet(["issuer", "activate-token", issuer.listen, digitalCardID])
        #expect(activated.status == 0, "\(activated.stderr)")
        #expect(activated.stdout.hasPrefix("\(digitalCardID) is ACTIVE (activated by the call centre)."))
        let again = try await tokenet(["issuer", "activate-token", issuer.listen, digitalCardID])
        #expect(again.stdout.hasPrefix("\(digitalCardID) is ACTIVE (it was already)."), "\(again.stdout)")
        let history = try await tokenet(["tsp", "history", tsp.listen, digitalCardID])
        #expect(history.stdout.contains("issuer call centre verified the cardholder"), "\(history.stdout)")
        let unknown = try await tokenet(["issuer", "activate-token", issuer.listen, "DNITHE-unknown"])
        #expect(unknown.status == 64 + 5, "\(unknown.stderr)")
        // The TSP's broker tells the wallet (CPS CARD_STATE), and the issuer app hears the wallet's event.
        try await walletCardState("card-1", is: "TOKEN_STATE_ACTIVE")
        _ = try await appViewRow(digitalCardID, state: "TOKEN_STATE_ACTIVE")
        let code = try await tokenet(["wallet", "submit-otp", wallet.listen, "card-1", "123456"])
        #expect(code.status == 64 + 9 && code.stderr.contains("ACTIVE"), "\(code.stderr)")
    }

    /// Waits (a minute at most) until the wallet shows its card `ref` in `state`: changes the wallet hears through
    /// the broker arrive in the background.
    func walletCardState(_ ref: String, is state: String) async throws {
        let deadline = Date().addingTimeInterval(60)
        var last = ""
        while Date() < deadline {
            let result = try await tokenet(["wallet", "cards", wallet.listen, "--json"])
            last = result.stdout + result.stderr
            let cards = try json(result)["cards"] as? [[String: Any]] ?? []
            if cards.first(where: { $0["cardRef"] as? String == ref })?["state"] as? String == state { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LiveTestError("the wallet never showed \(ref) as \(state): \(last)")
    }

    /// The person's choices in the wallet app reach the issuer app's listener: the selected card and the active
    /// wallet account; choosing the same again emits nothing.
    @Test func theIssuerAppHearsTheWalletsSelectionsAndAccountChanges() async throws {
        _ = try await tokenet([
            "wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123",
        ])
        _ = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        let cards = try json(try await tokenet(["wallet", "cards", wallet.listen, "--json"]))
        let digitalCardID = try #require((cards["cards"] as? [[String: Any]])?.first?["digitalCardId"] as? String)
        _ = try await appViewRow(digitalCardID, state: "TOKEN_STATE_ACTIVE")

        let selected = try await tokenet(["wallet", "select-card", wallet.listen, "card-1"])
        #expect(selected.status == 0 && selected.stdout.contains("selected card card-1: changed"), "\(selected)")
        let again = try await tokenet(["wallet", "select-card", wallet.listen, "card-1"])
        #expect(again.stdout.contains("unchanged"), "\(again.stdout)")
        let unknown = try await tokenet(["wallet", "select-card", wallet.listen, "card-9"])
        #expect(unknown.status == 64 + 5, "\(unknown.stderr)")
        // The other account has no card selected, and the app hears so; back on the first, its card is selected.
        let switched = try await tokenet(["wallet", "use-account", wallet.listen, "wallet-account-2"])
        #expect(
            switched.status == 0
                && switched.stdout.contains("active wallet account wallet-account-2, selected card none: changed"),
            "\(switched)")
        var view = try await appView(account: "wallet-account-2", selected: "")
        #expect(view["walletAccountId"] as? String == "wallet-account-2", "\(view)")
        #expect((view["selectedDigitalCardId"] as? String ?? "") == "", "\(view)")
        let back = try await tokenet(["wallet", "use-account", wallet.listen, "wallet-account-1"])
        #expect(back.stdout.contains("active wallet account wallet-account-1, selected card card-1"), "\(back)")
        view = try await appView(account: "wallet-account-1", selected: digitalCardID)
        #expect(view["selectedDigitalCardId"] as? String == digitalCardID, "\(view)")
        #expect(view["walletAccountId"] as? String == "wallet-account-1", "\(view)")
        let text = try await tokenet(["issuer", "app-view", issuer.listen])
        #expect(text.stdout.contains("Selected in the wallet: \(digitalCardID)"), "\(text.stdout)")
    }

    /// The issuer app's view once it shows wallet account `account` with `selected` selected ("" for none), or as it
    /// is after a minute.
    func appView(account: String, selected: String) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(60)
        var view: [String: Any] = [:]
        while Date() < deadline {
            view = try json(try await tokenet(["issuer", "app-view", issuer.listen, "--json"]))
            if (view["selectedDigitalCardId"] as? String ?? "") == selected,
                view["walletAccountId"] as? String == account
            {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return view
    }

    @Test func aRestartedWalletKeepsItsCardsAndAnswersAgainWithoutANewToken() async throws {
        _ = try await tokenet([
            "wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123",
        ])
        let first = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1", "--json"])
        let (wallet, tsp) = (self.wallet, self.tsp)
        let restarted = try await offThePool {
            wallet.stop()
            return try NodeProcess(
                "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: wallet.listen,
                directory: wallet.directory, extra: ["--tsp", tsp.listen])
        }
        let again = try await tokenet(["wallet", "accept-terms", restarted.listen, "card-1", "--json"])
        #expect(again.status == 0 && again.stdout == first.stdout)
        let tokens = try json(try await tokenet(["tsp", "tokens", tsp.listen, "--json"]))
        #expect((tokens["tokens"] as? [Any])?.count == 1)
    }
}
