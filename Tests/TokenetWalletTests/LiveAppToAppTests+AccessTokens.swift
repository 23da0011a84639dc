import Foundation
import Testing

/// The TSP's checks of the access token the issuer app presents (`IssuerIdv/ActivateDigitalCard`, called here with
/// the issuer node's certificate as the app does), and the removal of a card the issuer app hears, over the three
/// real processes.
extension LiveAppToAppTests {
    /// Enrols Chloe's credit account in the issuer app with her PIN (2580), as the demo does.
    static func enrolChloe(_ nodes: LiveProvisioningTests) async throws {
        let enrolled = try await nodes.tokenet([
            "issuer", "enroll", nodes.issuer.listen, "ch-chloe", "acc-chloe-credit",
        ])
        let reference = try #require(enrolled.stdout.firstMatch(of: /reference (ref-[A-Za-z0-9_-]+)/)?.output.1)
        let outbox = try nodes.json(
            try await nodes.tokenet([
                "issuer", "outbox", nodes.issuer.listen, "--digital-card", "enrolment:\(reference)", "--json",
            ]))
        let text = try #require((outbox["messages"] as? [[String: Any]])?.first?["text"] as? String)
        let code = try #require(text.firstMatch(of: /code is ([A-Z0-9]+)\s/)?.output.1)
        let activated = try await nodes.tokenet([
            "issuer-app", "activate", nodes.issuer.listen, "--ref", String(reference), "--code", String(code),
            "--pin", "2580",
        ])
        #expect(activated.status == 0, "\(activated.stdout) \(activated.stderr)")
    }

    /// A fresh access token for Chloe from the issuer app's login.
    static func accessToken(_ nodes: LiveProvisioningTests) async throws -> String {
        let login = try nodes.json(
            try await nodes.tokenet(["issuer-app", "login", nodes.issuer.listen, "ch-chloe", "--pin", "2580", "--json"])
        )
        return try #require(login["accessToken"] as? String)
    }

    /// `ActivateDigitalCard` as the issuer app calls it, with the issuer node's certificate.
    static func activateDigitalCard(_ nodes: LiveProvisioningTests, _ token: String, accessToken: String)
        async throws -> CommandResult
    {
        let pki = try TestPKI.directory()
        return try await runTokenet([
            "call", nodes.tsp.listen, "tokenet.tsp.v1.IssuerIdv/ActivateDigitalCard",
            "-d", #"{"digitalCardId": "\#(token)", "accessToken": "\#(accessToken)"}"#,
            "--cacert", pki + "/ca.pem", "--cert", pki + "/issuer.pem", "--key", pki + "/issuer.key",
        ])
    }

    @Test func aForgedTokenIsRefusedAndADeletedCardCannotBeActivated() async throws {
        let nodes = try await LiveProvisioningTests()
        try await Self.enrolChloe(nodes)
        let token = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let genuine = try await Self.accessToken(nodes)

        // The same claims with the signature's last character changed, and a token that is not one at all.
        let last = genuine.last == "A" ? "B" : "A"
        for forged in [String(genuine.dropLast()) + last, "not-an-access-token"] {
            let refused = try await Self.activateDigitalCard(nodes, token, accessToken: forged)
            #expect(refused.status == 64 + 16, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("UNAUTHENTICATED"), "\(refused.stderr)")
        }
        let history = try await nodes.tokenet(["tsp", "history", nodes.tsp.listen, token])
        #expect(!history.stdout.contains("in-app ID&V"), "\(history.stdout)")

        // The cardholder removes the card from the wallet: the issuer app hears TOKENIZED_CARD_REMOVED, and the TSP
        // refuses to activate the deleted token even for its owner's genuine token.
        let deleted = try await nodes.tokenet([
            "wallet", "delete", nodes.wallet.listen, "card-1", "--reason", "USER_REQUEST",
        ])
        #expect(deleted.status == 0, "\(deleted.stdout) \(deleted.stderr)")
        let deadline = Date().addingTimeInterval(60)
        var row: [String: Any] = [:]
        while Date() < deadline {
            let view = try nodes.json(try await nodes.tokenet(["issuer", "app-view", nodes.issuer.listen, "--json"]))
            row = (view["cards"] as? [[String: Any]])?.first { $0["digitalCardId"] as? String == token } ?? [:]
            if row["removed"] as? Bool == true { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(row["removed"] as? Bool == true, "\(row)")
        let late = try await Self.activateDigitalCard(nodes, token, accessToken: try await Self.accessToken(nodes))
        #expect(late.status == 64 + 9, "\(late.stdout) \(late.stderr)")
        #expect(late.stderr.contains("DEACTIVATED"), "\(late.stderr)")
    }

    @Test func anExpiredTokenIsRefused() async throws {
        let nodes = try await LiveProvisioningTests(tspPolicy: #"{"access_token_ttl_s": 1}"#)
        try await Self.enrolChloe(nodes)
        let token = try await Self.steppedUp(nodes, ref: "card-1", pan: "4761000030000054", expiry: "11/29")
        let accessToken = try await Self.accessToken(nodes)
        try await Task.sleep(for: .milliseconds(2_100))
        let refused = try await Self.activateDigitalCard(nodes, token, accessToken: accessToken)
        #expect(refused.status == 64 + 16, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("expired"), "\(refused.stderr)")
        let cards = try await nodes.tokenet(["wallet", "cards", nodes.wallet.listen])
        #expect(cards.stdout.contains("INACTIVE"), "\(cards.stdout)")
    }
}
