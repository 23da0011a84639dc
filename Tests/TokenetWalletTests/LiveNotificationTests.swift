import Foundation
import Testing
import TokenetTestSupport

/// The notification flows over the three real node processes and the TSP's broker, driven by the real `tokenet`:
/// a transaction, a suspend and a resume, and an issuer message are each seen by the TSP, the wallet and the issuer
/// app.
@Suite(.serialized) final class LiveNotificationTests: @unchecked Sendable {
    let tsp: NodeProcess
    let wallet: NodeProcess
    let issuer: NodeProcess
    let flags: [String]

    init() async throws {
        (tsp, wallet, issuer, flags) = try await offThePool { try LiveProvisioningTests.startNodes() }
    }

    func tokenet(_ arguments: [String]) async throws -> CommandResult {
        let arguments = arguments + flags
        return try await offThePool { try runExecutable("tokenet", arguments) }
    }

    func json(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await tokenet(arguments + ["--json"])
        guard result.status == 0 else { throw LiveTestError("tokenet \(arguments) failed: \(result.stderr)") }
        return try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// Asks again until `done` holds: each party hears of a change through the broker, asynchronously (a minute at
    /// most).
    func eventually(
        _ arguments: [String], _ what: String, done: ([String: Any]) -> Bool
    ) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(60)
        var last: [String: Any] = [:]
        while Date() < deadline {
            last = try await json(arguments)
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LiveTestError("\(what) never happened; last answer: \(last)")
    }

    func list(_ object: [String: Any], _ key: String) -> [[String: Any]] {
        object[key] as? [[String: Any]] ?? []
    }

    /// card-1 digitized ACTIVE; its digital card id.
    func activeCard() async throws -> String {
        let added = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        #expect(added.status == 0, "\(added.stderr)")
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.stdout.contains("is ACTIVE."), "\(accepted.stdout)\(accepted.stderr)")
        let cards = try await json(["wallet", "cards", wallet.listen])
        return try #require(list(cards, "cards").first?["digitalCardId"] as? String)
    }

    /// The issuer app's processed notifications of `type` about `id`.
    func appNotifications(_ type: String, _ id: String) async throws -> [[String: Any]] {
        list(try await json(["issuer-app", "notifications", issuer.listen]), "notifications").filter {
            $0["processed"] as? Bool == true && $0["messageType"] as? String == type && $0["cardId"] as? String == id
        }
    }

    func appSaw(_ type: String, _ id: String, where match: @escaping ([String: Any]) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try await appNotifications(type, id).contains(where: match) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LiveTestError("the issuer app never processed the expected \(type) for \(id)")
    }

    @Test func aTransactionASuspendAndResumeAndAMessageAreSeenByEveryParty() async throws {
        let id = try await activeCard()

        // A transaction: the TSP records it, the wallet lists it, the issuer app shows it with the last call time.
        let paid = try await json([
            "tsp", "simulate-transaction", tsp.listen, "--card", id, "--amount", "12.50",
            "--merchant", "Coffee\nCorner\u{1B}[2J",
        ])
        let transactionID = try #require(paid["transactionId"] as? String)
        let lastCall = try #require(paid["lastCallTimestampMs"] as? String)
        let tspTransactions = try await json(["tsp", "transactions", tsp.listen, id])
        #expect(list(tspTransactions, "transactions").map { $0["transactionId"] as? String } == [transactionID])
        // Text a node hands back (here the merchant's name) prints with its control characters escaped, so an
        // escape sequence in it cannot act on the terminal, and a line break cannot print its row as two.
        let table = try await tokenet(["tsp", "transactions", tsp.listen, id])
        #expect(
            table.stdout.contains(#"Coffee\u{A}Corner\u{1B}[2J"#) && !table.stdout.contains("\u{1B}"), "\(table.stdout)"
        )
        #expect(table.stdout.split(separator: "\n").count == 2, "\(table.stdout)")
        // A wallet account that looks like a card number is masked where a message quotes it.
        let none = try await tokenet(["tsp", "tokens", tsp.listen, "--wallet-account", "4761000010000017"])
        #expect(none.stdout.contains("wallet account ************0017."), "\(none.stdout)\(none.stderr)")
        let walletTransactions = try await eventually(["wallet", "transactions", wallet.listen], "wallet transaction") {
            self.list($0, "transactions").contains { $0["transactionId"] as? String == transactionID }
        }
        #expect(list(walletTransactions, "transactions").first?["amountMinor"] as? String == "1250")
        try await appSaw("TRANSACTION_NOTIFICATION", id) { $0["lastCallTimestampMs"] as? String == lastCall }

        // The cardholder suspends in the wallet: the TSP, the wallet and the issuer app (notification and view) agree.
        let suspended = try await tokenet(["wallet", "suspend", wallet.listen, "card-1", "--reason", "USER_REQUEST"])
        #expect(suspended.stdout.contains("is now SUSPENDED"), "\(suspended.stdout)\(suspended.stderr)")
        try await seenByEveryParty(id, state: "TOKEN_STATE_SUSPENDED")
        let history = try await tokenet(["tsp", "history", tsp.listen, id])
        #expect(history.stdout.contains("USER_REQUEST"), "\(history.stdout)")

        // The issuer suspends it too (a lost card): each suspension is its own party's to lift, so the cardholder's
        // resume leaves the token SUSPENDED under the issuer's.
        let held = try await tokenet(["issuer", "suspend-tokens", issuer.listen, id, "--reason", "LOST_CARD"])
        #expect(held.status == 0 && held.stdout.contains("OK"), "\(held.stdout)\(held.stderr)")
        let lifted = try await tokenet(["wallet", "resume", wallet.listen, "card-1", "--reason", "USER_REQUEST"])
        #expect(lifted.stdout.contains("is now SUSPENDED"), "\(lifted.stdout)\(lifted.stderr)")
        try await seenByEveryParty(id, state: "TOKEN_STATE_SUSPENDED")

        // The issuer resumes it (a found card): the wallet hears it from the TSP only.
        let resumed = try await tokenet(["issuer", "resume-tokens", issuer.listen, id, "--reason", "CARD_FOUND"])
        #expect(resumed.status == 0 && resumed.stdout.contains("OK"), "\(resumed.stdout)\(resumed.stderr)")
        try await seenByEveryParty(id, state: "TOKEN_STATE_ACTIVE")
        // Resumed again, the token is refused (it is ACTIVE): the table says so, and the exit status too (64 + 9).
        let again = try await tokenet(["issuer", "resume-tokens", issuer.listen, id, "--reason", "CARD_FOUND"])
        #expect(
            again.status == 73 && again.stdout.contains("FAILED_PRECONDITION: cannot resume a token that is ACTIVE"),
            "\(again.stdout)\(again.stderr)")
        // A long id someone typed is cut in the table's id column: the table was as wide as the id, every row.
        let long = String(repeating: "z", count: 5_000)
        let unknown = try await tokenet(["issuer", "resume-tokens", issuer.listen, long, "--reason", "CARD_FOUND"])
        #expect(unknown.stdout.contains(String(repeating: "z", count: 99) + "…"), "\(unknown.stdout.prefix(300))")
        #expect(unknown.stdout.split(separator: "\n").allSatisfy { $0.count < 1_500 }, "\(unknown.stdout.count)")

        // An issuer message: the wallet keeps it, the issuer app shows title, body and action.
        let sent = try await json([
            "issuer", "send-message", issuer.listen, id, "--title", "Card found", "--body", "It works again",
            "--action", "OPEN_CARD_DETAILS",
        ])
        let messageID = try #require(sent["messageId"] as? String)
        _ = try await eventually(["wallet", "inbox", wallet.listen], "wallet message") {
            self.list($0, "notifications").contains {
                $0["messageId"] as? String == messageID && $0["messageType"] as? String == "MESSAGING"
            }
        }
        try await appSaw("MESSAGING", id) { ($0["action"] as? String)?.contains("Card found — It works again") == true }

        for node in [wallet, tsp, issuer] { #expect(!node.stderr.contains("4761000010000009")) }
    }

    @Test func authnRenewalAndReplenishmentAcrossTheParties() async throws {
        let id = try await activeCard()

        // AUTHN: the issuer app asks the cardholder, who proceeds; the TSP records it and notifies the payment.
        let asked = try await json([
            "tsp", "simulate-transaction", tsp.listen, "--card", id, "--amount", "99", "--merchant", "Shop", "--authn",
        ])
        let authnID = try #require(asked["authnRequestId"] as? String)
        let deadline = Date().addingTimeInterval(60)
        while try await !list(json(["issuer-app", "notifications", issuer.listen]), "authnRequests").contains(where: {
            $0["authnRequestId"] as? String == authnID
        }) {
            guard Date() < deadline else { throw LiveTestError("the issuer app never got the AUTHN request") }
            try await Task.sleep(for: .milliseconds(100))
        }
        // Waiting for the cardholder, the payment is neither approved nor declined yet.
        let waiting = try await tokenet(["tsp", "transactions", tsp.listen, id])
        #expect(waiting.stdout.contains("pending") && waiting.stdout.contains("PENDING"), "\(waiting.stdout)")
        // Proceeding authenticates the payment: the card's cardholder (Alice) signs in to the app with its PIN,
        // which needs an app she has activated. Without it any operator of the app proceeded for anyone.
        let withoutPIN = try await tokenet(["issuer-app", "authn", issuer.listen, authnID, "--proceed"])
        #expect(withoutPIN.status == 2 && withoutPIN.stderr.contains("--proceed needs the app's --pin"))
        let authn = ["issuer-app", "authn", issuer.listen, authnID, "--proceed", "--pin", "2580"]
        let notActivated = try await tokenet(authn)
        #expect(notActivated.status == 64 + 5, "\(notActivated.stderr)")
        #expect(notActivated.stderr.contains("could not be signed in, so the payment is not authenticated"))
        let enrolled = try await json(["issuer", "enroll", issuer.listen, "ch-alice", "acc-alice-checking"])
        let reference = try #require(enrolled["referenceId"] as? String)
        let outbox = try await json(["issuer", "outbox", issuer.listen, "--digital-card", "enrolment:\(reference)"])
        let text = try #require(list(outbox, "messages").first?["text"] as? String)
        let code = try #require(text.firstMatch(of: /code is ([A-Z0-9]+)\s/)?.output.1)
        let activated = try await tokenet([
            "issuer-app", "activate", issuer.listen, "--ref", reference, "--code", String(code), "--pin", "2580",
        ])
        #expect(activated.status == 0, "\(activated.stderr)")
        let wrongPIN = try await tokenet(["issuer-app", "authn", issuer.listen, authnID, "--proceed", "--pin", "1470"])
        #expect(wrongPIN.status == 64 + 16 && wrongPIN.stderr.contains("the PIN is not correct"), "\(wrongPIN.stderr)")
        let answered = try await tokenet(authn)
        #expect(answered.stdout.hasPrefix("\(authnID): PROCEEDED"), "\(answered.stdout)\(answered.stderr)")
        let recorded = try await json(["tsp", "transactions", tsp.listen, id])
        #expect(list(recorded, "transactions").first?["authnStatus"] as? String == "PROCEEDED")
        _ = try await eventually(["wallet", "transactions", wallet.listen], "the authenticated payment") {
            self.list($0, "transactions").contains { $0["approved"] as? Bool == true }
        }

        // Renewal: a new expiry; the token keeps working and the issuer app resynchronises the card id.
        let renewed = try await tokenet(["issuer", "renew-card", issuer.listen, "card-visa-approve", "--exp", "12/31"])
        #expect(renewed.stdout.contains("tokens kept: \(id)"), "\(renewed.stdout)\(renewed.stderr)")
        _ = try await eventually(["issuer-app", "notifications", issuer.listen], "the renewal") {
            self.list($0, "cardIds").contains {
                $0["digitalCardId"] as? String == id && $0["expiry"] as? String == "12/31"
            }
        }
        // The TSP answered, so nothing is left pending: cards lists no renewal, and there is none to abandon.
        let cards = try await json(["issuer", "cards", issuer.listen])
        let card = list(cards, "cards").first { $0["cardId"] as? String == "card-visa-approve" }
        #expect(card?["expiry"] as? String == "12/31" && card?["pendingRenewal"] == nil, "\(cards)")
        let abandon = try await tokenet(["issuer", "renew-card", issuer.listen, "card-visa-approve", "--abandon"])
        #expect(abandon.status == 64 + 9, "\(abandon.stdout)\(abandon.stderr)")
        #expect(abandon.stderr.contains("card-visa-approve has no pending renewal to abandon"), "\(abandon.stderr)")
        let force = try await tokenet(["issuer", "renew-card", issuer.listen, "card-visa-approve", "--force-complete"])
        #expect(force.status == 64 + 9, "\(force.stdout)\(force.stderr)")
        #expect(force.stderr.contains("no pending renewal to force complete"), "\(force.stderr)")
        let paid = try await tokenet([
            "tsp", "simulate-transaction", tsp.listen, "--card", id, "--amount", "1", "--merchant", "After renewal",
        ])
        #expect(paid.status == 0, "\(paid.stderr)")

        // Payment keys: a batch at activation, and one more when the TSP's MG push asks for it.
        let before = try await json(["wallet", "keys", wallet.listen, "card-1"])
        #expect(before["batches"] as? Int == 1, "\(before)")
        let pushed = try await tokenet(["tsp", "request-keys", tsp.listen, id])
        #expect(pushed.status == 0, "\(pushed.stderr)")
        _ = try await eventually(["wallet", "keys", wallet.listen, "card-1"], "an MG-triggered batch") {
            $0["batches"] as? Int == 2
        }
        try await appSaw("REPLENISHMENT", id) { ($0["action"] as? String)?.contains("10 payment keys issued") == true }
        // The push carries no batch: the inbox said "0 keys issued, 0 left before" beside the batch it brought.
        let inbox = try await tokenet(["wallet", "inbox", wallet.listen])
        let row = inbox.stdout.split(separator: "\n").first { $0.contains("REPLENISHMENT") }
        #expect(row?.contains("the TSP asks for a new batch of payment keys") == true, "\(inbox.stdout)")
    }

    /// A renewal whose TSP cannot be reached is not sent: no connection was made, so the issuer knows the TSP never
    /// got it, and the card keeps its number with nothing pending (it stayed pending, to be abandoned once the TSP
    /// could be asked). The TSP's address is held meanwhile by a node of another role, which the issuer refuses at
    /// the handshake: a failure no retry can mend, so the call fails at once instead of retrying until its deadline.
    /// Once the TSP is back, the same renewal goes through.
    @Test func aRenewalTheTSPCannotBeReachedForIsNotSentAndGoesOnceItCan() async throws {
        _ = try await activeCard()
        let (tsp, issuer) = (self.tsp, self.issuer)
        let impostor = try await offThePool {
            tsp.stop()
            return try NodeProcess(
                "wallet-node", role: "wallet", pki: try TestPKI.directory(), listen: tsp.listen,
                extra: ["--tsp", tsp.listen, "--issuer", issuer.listen])
        }
        let renewal = ["issuer", "renew-card", issuer.listen, "card-visa-approve", "--pan", "4761000010000017"]
        let notSent = try await tokenet(renewal)
        #expect(
            notSent.status == 64 + 14
                && notSent.stderr.contains("was not sent, so the card keeps its number and expiry"),
            "\(notSent.stdout)\(notSent.stderr)")
        let unchanged = try await json(["issuer", "cards", issuer.listen])
        let card = list(unchanged, "cards").first { $0["cardId"] as? String == "card-visa-approve" }
        #expect(card?["maskedPan"] as? String == "************0009", "\(unchanged)")
        #expect(list(unchanged, "cards").allSatisfy { $0["pendingRenewal"] == nil }, "\(unchanged)")

        let restarted = try await offThePool {
            impostor.stop()
            return try NodeProcess(
                "tsp-node", role: "tsp", pki: try TestPKI.directory(), listen: tsp.listen, directory: tsp.directory,
                extra: ["--issuer", issuer.listen])
        }
        defer { restarted.stop() }
        let renewed = try await tokenet(renewal)
        #expect(
            renewed.status == 0 && renewed.stdout.hasPrefix("card-visa-approve renewed: ************0017"),
            "\(renewed.stdout)\(renewed.stderr)")
    }

    /// A renewal whose answer does not come in time may be pending at the issuer: the bare DEADLINE_EXCEEDED left
    /// the person guessing. When the TSP does not answer (stopped with SIGSTOP), the issuer says so before the
    /// command's deadline, and that the renewal stays pending; settling it works.
    @Test func aRenewalWhoseAnswerDoesNotComeInTimeSaysHowToSettleIt() async throws {
        _ = try await activeCard()
        _ = try await tokenet(["issuer", "cards", issuer.listen])  // the CLI's own connection is not the one held
        #expect(tsp.process.send(SIGSTOP))
        let tspProcess = tsp.process
        defer { _ = tspProcess.send(SIGCONT) }
        // 6 s: the issuer gives its call to the TSP all but 1 s of it, its room to answer (with 2 s, 400 ms, which a
        // loaded machine can spend before the issuer's answer is in, and the command said only its own deadline).
        let late = try await tokenet([
            "issuer", "renew-card", issuer.listen, "card-visa-approve", "--exp", "11/31", "--deadline", "6s",
        ])
        #expect(tsp.process.send(SIGCONT))
        #expect(late.status == 64 + 4, "\(late.stdout)\(late.stderr)")
        // The issuer's answer has that 1 s to reach the command: a machine that stalls the issuer or the command
        // as long ends the command on its own deadline first, a race the issuer cannot win; then there is no
        // answer of the issuer's to read.
        if !late.stderr.contains("within the command's deadline of 6000 ms") {
            #expect(
                late.stderr.contains("the TSP's answer to the renewal of card card-visa-approve was lost (")
                    && late.stderr.contains("stays pending: repeat it to complete it"), "\(late.stderr)")
            // The reason names the deadline the person gave, not the shorter one the issuer gave its call to the TSP.
            #expect(late.stderr.contains("(the TSP did not answer within this call's deadline)"), "\(late.stderr)")
            #expect(!late.stderr.contains(" ms)"), "\(late.stderr)")
            // The issuer's answer says it: the command adds no guess of its own.
            #expect(!late.stderr.contains("may have reached the issuer"), "\(late.stderr)")
        }
        let settled = try await tokenet(["issuer", "renew-card", issuer.listen, "card-visa-approve", "--exp", "11/31"])
        #expect(settled.status == 0, "\(settled.stdout)\(settled.stderr)")
    }

    /// A card digitized while its issuer is down is decided by the TSP's stand-in, which tells the issuer once it is
    /// back (STAND_IN_ADVICE through the broker): the issuer then counts the token among its card's, and a renewal
    /// of the card reaches it. Before, the issuer never heard of the token and the renewal left it out.
    @Test func aTokenTheStandInApprovedWhileTheIssuerWasDownIsRenewedWithItsCard() async throws {
        let issuer = self.issuer
        try await offThePool { issuer.stop() }
        let added = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000082", "--exp", "11/30", "--cvc", "246"])
        #expect(added.status == 0, "\(added.stderr)")
        let accepted = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-1"])
        #expect(accepted.stdout.contains("is ACTIVE."), "\(accepted.stdout)\(accepted.stderr)")
        // A stand-in approval is named as one: a plain "APPROVED" read as the issuer's.
        #expect(
            accepted.stdout.hasPrefix("card-1: APPROVED by the TSP's stand-in rule (the issuer did not answer"),
            "\(accepted.stdout)")
        let cards = try await json(["wallet", "cards", wallet.listen])
        let id = try #require(list(cards, "cards").first?["digitalCardId"] as? String)
        #expect(tsp.stderr.contains("decided_by=stand-in"), "\(tsp.stderr)")

        let restarted = try await offThePool {
            try NodeProcess(
                "issuer-node", role: "issuer", pki: try TestPKI.directory(), listen: issuer.listen,
                directory: issuer.directory,
                extra: [
                    "--tsp", self.tsp.listen, "--wallet", self.wallet.listen, "--fixtures",
                    Executables.packageRoot.appendingPathComponent("Tools/fixtures/issuer.json").path,
                ])
        }
        defer { restarted.stop() }
        let deadline = Date().addingTimeInterval(60)
        while !restarted.stderr.contains("recorded with its card") {
            guard Date() < deadline else { throw LiveTestError("no stand-in advice recorded: \(restarted.stderr)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(restarted.stderr.contains("digital_card_id=\(id) card=card-visa-standin"), "\(restarted.stderr)")
        let listed = try await json(["issuer", "cards", restarted.listen])
        let card = list(listed, "cards").first { $0["cardId"] as? String == "card-visa-standin" }
        #expect(card?["digitalCardIds"] as? [String] == [id], "\(listed)")
        let renewed = try await tokenet([
            "issuer", "renew-card", restarted.listen, "card-visa-standin", "--exp", "12/31",
        ])
        #expect(renewed.stdout.contains("tokens kept: \(id)"), "\(renewed.stdout)\(renewed.stderr)")
    }

    /// The wallet may delete a token the issuer suspended, but adding the card again does not lift the suspension:
    /// the TSP tells the issuer, whose approving rule steps the card up instead, and the TSP's history says why.
    @Test func aCardTheIssuerSuspendedIsSteppedUpWhenTheWalletAddsItAgain() async throws {
        let id = try await activeCard()
        let suspended = try await tokenet([
            "issuer", "suspend-tokens", issuer.listen, id, "--reason", "FRAUD_SUSPECTED",
        ])
        #expect(suspended.status == 0, "\(suspended.stdout)\(suspended.stderr)")
        try await seenByEveryParty(id, state: "TOKEN_STATE_SUSPENDED")
        let deleted = try await tokenet(["wallet", "delete", wallet.listen, "card-1", "--reason", "USER_REQUEST"])
        #expect(deleted.status == 0, "\(deleted.stdout)\(deleted.stderr)")

        let added = try await tokenet(
            ["wallet", "add-card", wallet.listen, "--pan", "4761000010000009", "--exp", "12/29", "--cvc", "123"])
        #expect(added.status == 0, "\(added.stderr)")
        let again = try await tokenet(["wallet", "accept-terms", wallet.listen, "card-2"])
        #expect(
            again.stdout.contains("asks for additional authentication") && again.stdout.contains("is INACTIVE."),
            "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("ID&V otp-sms: OTP_SMS"), "\(again.stdout)")
        #expect(
            issuer.stderr.contains("held_suspension") && issuer.stderr.contains("suspended by issuer:"),
            "\(issuer.stderr.suffix(2_000))")
        #expect(tsp.stderr.contains("a suspension of the card stands in this wallet account"))
    }

    func seenByEveryParty(_ id: String, state: String) async throws {
        let tokens = try await json(["tsp", "tokens", tsp.listen])
        #expect(list(tokens, "tokens").first { $0["digitalCardId"] as? String == id }?["state"] as? String == state)
        _ = try await eventually(["wallet", "cards", wallet.listen], "wallet card \(state)") {
            self.list($0, "cards").contains { $0["digitalCardId"] as? String == id && $0["state"] as? String == state }
        }
        try await appSaw("CARD_STATE", id) {
            (($0["notification"] as? [String: Any])?["cardState"] as? [String: Any])?["tokenState"] as? String == state
        }
        _ = try await eventually(["issuer", "app-view", issuer.listen], "issuer app view \(state)") {
            self.list($0, "cards").contains {
                $0["digitalCardId"] as? String == id && $0["tokenState"] as? String == state
            }
        }
    }
}
