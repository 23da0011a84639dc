import Foundation
import Testing
import TokenetNode
import TokenetTestSupport

/// `tokenet issuer cards` against an issuer-node holding 2,500 cards, more than two pages of the largest size
/// (`PageRequest.maximumSize`): the CLI walks every page and prints each card once, in the order of its id, as a
/// table and as one JSON listing.
@Suite(.serialized) struct IssuerCardListingLiveTests {
    static let extraCards = 2_491

    @Test(.timeLimit(.minutes(3))) func everyPageIsListed() async throws {
        try await offThePool { try Self.listEveryPage() }
    }

    static func listEveryPage() throws {
        let data = try TemporaryDirectory()
        let fixture = data.path("issuer.json")
        let ids = try largeFixture(writingTo: fixture)
        let pki = DevelopmentPKI.shared
        let address = "127.0.0.1:\(try freeLoopbackPort())"
        let node = try LaunchedProcess(
            niced: "issuer-node",
            [
                "--cert", pki.path("issuer.pem"), "--key", pki.path("issuer.key"), "--ca", pki.path("ca.pem"),
                "--listen", address, "--tsp", "127.0.0.1:\(try freeLoopbackPort())", "--fixtures", fixture,
                "--data-dir", data.path("issuer"), "--ready-file", data.path("issuer.ready"),
                "--parent-pid", "\(getpid())",
            ])
        defer { PythonClientInteropTests.stop(node.process) }
        _ = try PythonClientInteropTests.waitFor(node.process, "issuer-node's ready file") {
            FileManager.default.fileExists(atPath: data.path("issuer.ready")) ? true : nil
        }
        let operatorTLS = [
            "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
        ]

        let json = try LaunchedProcess.run("tokenet", ["issuer", "cards", address, "--json"] + operatorTLS)
        try #require(json.status == 0, "\(json.stderr)")
        let listing = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let cards = try #require(listing["cards"] as? [[String: Any]])
        #expect(cards.compactMap { $0["cardId"] as? String } == ids.sorted())
        #expect(listing["nextPageToken"] == nil)

        let table = try LaunchedProcess.run("tokenet", ["issuer", "cards", address] + operatorTLS)
        try #require(table.status == 0, "\(table.stderr)")
        let rows = table.stdout.split(separator: "\n").dropFirst()
        #expect(rows.map { String($0.prefix { $0 != " " }) } == ids.sorted())
        // A card that is not eligible shows so, not the rule its digitizations never reach.
        let notEligible = cards.first { $0["cardId"] as? String == "card-visa-not-eligible" }
        #expect((notEligible?["notEligibleReason"] as? String)?.isEmpty == false, "\(String(describing: notEligible))")
        let row = rows.first { $0.hasPrefix("card-visa-not-eligible ") }
        #expect(row?.contains("not eligible") == true, "\(String(describing: row))")
        #expect(rows.first { $0.hasPrefix("card-visa-approve ") }?.contains("not eligible") == false)
    }

    /// The demo fixture with `extraCards` more cards of one account (Luhn-valid numbers in its 4761 range);
    /// returns every card id.
    static func largeFixture(writingTo path: String) throws -> [String] {
        let text = try String(contentsOfFile: MultiIssuerLiveTests.fixture, encoding: .utf8)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        var cards = try #require(json["cards"] as? [[String: Any]])
        for index in 0..<extraCards {
            let body = "476199" + String(format: "%09d", index)
            cards.append([
                "id": String(format: "card-extra-%05d", index), "accountId": "acc-alice-checking",
                "pan": body + String(MultiIssuerLiveTests.luhnCheckDigit(body)), "expiry": "12/29", "cvc": "123",
                "cardholderName": "ALICE MARTIN", "digitization": ["rule": "approve"],
            ])
        }
        json["cards"] = cards
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        return cards.compactMap { $0["id"] as? String }
    }
}
