import Foundation
import Testing

/// Strong-authentication enrolment driven by the real CLI against the three real nodes: the backend's enrolment and
/// outbox, the issuer app's activation (a trivial PIN and a wrong code first), linked accounts, a wrong PIN, login,
/// unlock (an unknown user NOT_FOUND) and account removal (the TSP revokes its credentials), with the status names and messages a person sees.
extension LiveProvisioningTests {
    @Test func enrolmentActivationLinkedAccountsAndLoginThroughTheCLI() async throws {
        let enrolled = try await tokenet(["issuer", "enroll", issuer.listen, "ch-alice", "acc-alice-checking"])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let reference = try #require(enrolled.stdout.firstMatch(of: /reference (ref-[A-Za-z0-9_-]+)/)?.output.1)
        let outbox = try json(
            try await tokenet(["issuer", "outbox", issuer.listen, "--digital-card", "enrolment:\(reference)", "--json"])
        )
        let text = try #require((outbox["messages"] as? [[String: Any]])?.first?["text"] as? String)
        #expect(text.contains("otp://p?u="))
        let code = try #require(text.firstMatch(of: /code is ([A-Z0-9]+)\s/)?.output.1)

        let activate = ["issuer-app", "activate", issuer.listen, "--ref", String(reference), "--name", "Checking"]
        let trivial = try await tokenet(activate + ["--code", String(code), "--pin", "1234"])
        #expect(trivial.status == 64 + 3)
        #expect(trivial.stderr.contains("INVALID_ARGUMENT") && trivial.stderr.contains("run of digits"))
        let wrong = try await tokenet(activate + ["--code", "WRONGCODE2", "--pin", "2580"])
        #expect(wrong.status == 0)
        #expect(wrong.stdout.contains("INCORRECT_CODE: the activation code is not correct; 4 tries left"))
        // The message's link carries the code and the reference, as the app opens it.
        let link = try #require(text.firstMatch(of: #/(otp://\S+)\. /#)?.output.1)
        let activated = try await tokenet(
            ["issuer-app", "activate", issuer.listen, "--link", String(link), "--name", "Checking", "--pin", "2580"])
        #expect(activated.stdout.contains("Activated acc-alice-checking for ch-alice; the app's PIN is set."))
        let reused = try await tokenet(activate + ["--code", String(code), "--pin", "2580"])
        #expect(reused.stdout.contains("ALREADY_USED"))

        let wrongPIN = try await tokenet(["issuer-app", "activate-linked", issuer.listen, "ch-alice", "--pin", "1470"])
        #expect(wrongPIN.status == 64 + 16)
        #expect(wrongPIN.stderr.contains("UNAUTHENTICATED") && wrongPIN.stderr.contains("the PIN is not correct"))
        let linked = try await tokenet(["issuer-app", "activate-linked", issuer.listen, "ch-alice", "--pin", "2580"])
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(linked.stdout.contains("acc-alice-credit") && linked.stdout.contains("SUCCESS"))
        let accounts = try await tokenet(["issuer-app", "accounts", issuer.listen, "ch-alice"])
        #expect(accounts.stdout.contains("acc-alice-checking") && accounts.stdout.contains("acc-alice-credit"))
        #expect(accounts.stdout.contains("PIN set."))

        let refused = try await tokenet(["issuer-app", "login", issuer.listen, "ch-alice", "--pin", "1470"])
        #expect(refused.status == 64 + 16)
        let login = try await tokenet(["issuer-app", "login", issuer.listen, "ch-alice", "--pin", "2580"])
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stdout.contains("Logged in ch-alice with acc-alice-checking"))
        let unlock = try await tokenet(["issuer", "unlock", issuer.listen, "ch-alice"])
        let nothingLocked = "Nothing of ch-alice was locked: neither the issuer app nor a credential at the TSP."
        #expect(unlock.stdout.contains(nothingLocked), "\(unlock.stdout)")
        // With --account, what is said is of that account alone.
        let oneAccount = try await tokenet([
            "issuer", "unlock", issuer.listen, "ch-alice", "--account", "acc-alice-credit",
        ])
        #expect(
            oneAccount.stdout.contains(
                "Nothing was locked: neither the issuer app of ch-alice nor a credential of account acc-alice-credit"),
            "\(oneAccount.stdout)")
        let unknown = try await tokenet(["issuer", "unlock", issuer.listen, "ch-nobody"])
        #expect(unknown.status == 64 + 5, "\(unknown.stdout)")
        #expect(unknown.stderr.contains("NOT_FOUND") && unknown.stderr.contains("no user \"ch-nobody\""))
        #expect(unknown.stdout.isEmpty)
        // Wrong PINs lock the app; the message gives the unlock command with the issuer's address, to run as printed.
        var lockedMessage = ""
        for _ in 0..<6 where lockedMessage.isEmpty {
            let guess = try await tokenet(["issuer-app", "login", issuer.listen, "ch-alice", "--pin", "1470"])
            if guess.stderr.contains("tokenet issuer unlock") { lockedMessage = guess.stderr }
        }
        #expect(lockedMessage.contains("(tokenet issuer unlock \(issuer.listen) ch-alice)"), "\(lockedMessage)")
        let unlocked = try await tokenet(["issuer", "unlock", issuer.listen, "ch-alice"])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let delete = ["issuer-app", "delete-account", issuer.listen, "ch-alice", "acc-alice-credit"]
        let noPIN = try await tokenet(delete)
        #expect(noPIN.status == 2 && noPIN.stderr.contains("--pin is required"))
        let removed = try await tokenet(delete + ["--pin", "2580"])
        #expect(removed.stdout.contains("1 account(s) left, the PIN stays."), "\(removed.stderr)")
        #expect(tsp.stderr.contains("credentials removed"), "\(tsp.stderr)")
        let usage = try await tokenet(["issuer-app", "login", issuer.listen, "ch-alice"])
        #expect(usage.status == 2 && usage.stderr.contains("--pin is required"))
        #expect(!issuer.stderr.contains(String(code)) && !tsp.stderr.contains(String(code)))
    }
}
