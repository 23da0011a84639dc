import Foundation
import Testing
import TokenetCard

@testable import TokenetIssuer

@Suite struct IssuerFixtureTests {
    @Test func shippedFixtureCoversEveryRule() throws {
        let fixture = try Support.fixture()
        #expect(fixture.issuer.id == "tokenet-bank")
        #expect(fixture.cards.map(\.id) == Cards.all.map(\.0))
        #expect(fixture.cards.map(\.pan) == Cards.all.map(\.1))
        let rules = Set(fixture.cards.map(\.digitization.name))
        #expect(rules == ["approve", "decline", "step-up", "by-score"])
        #expect(fixture.cards.filter { $0.notEligibleReason != nil }.map(\.id) == ["card-visa-not-eligible"])
        let schemes = try fixture.cards.map { try PAN($0.pan).scheme }
        #expect(schemes.contains(.visa) && schemes.contains(.mastercard))
        for card in fixture.cards {
            #expect(Luhn.isValid(card.pan))
            #expect(fixture.issuer.binRanges.contains { $0.contains(card.pan) })
        }
    }

    @Test func stepUpOffersEveryMethodType() throws {
        let card = try #require(try Support.fixture().cards.first { $0.id == Cards.visaStepUp.0 })
        guard case .stepUp(let idv) = card.digitization else {
            Issue.record("the step-up card has rule \(card.digitization.name)")
            return
        }
        #expect(idv.map(\.type) == IdvMethodSpec.Kind.allCases)
    }

    /// A change to the shipped fixture, and the message it must produce.
    struct BadCase: Sendable, CustomTestStringConvertible {
        let change: @Sendable (inout [String: Any]) -> Void
        let message: String
        var testDescription: String { message }
    }

    /// A change to entry `index` of the fixture's list `list` ("cards", "cardholders").
    static func entry(_ list: String, _ index: Int, _ body: @escaping @Sendable (inout [String: Any]) -> Void)
        -> @Sendable (inout [String: Any]) -> Void
    {
        { json in
            var entries = json[list] as! [[String: Any]]
            body(&entries[index])
            json[list] = entries
        }
    }

    static func card(_ index: Int, _ body: @escaping @Sendable (inout [String: Any]) -> Void)
        -> @Sendable (inout [String: Any]) -> Void
    { entry("cards", index, body) }

    static let badCases: [BadCase] = [
        BadCase(
            change: card(0) { $0["pan"] = "4761000010000008" },
            message: "cards[0] \"card-visa-approve\": the card number is not valid"),
        BadCase(
            change: card(1) { $0["pan"] = "4111111111111111" },
            message: "cards[1] \"card-mc-receipt\": the card number ending 1111 is outside the issuer's BIN ranges"),
        BadCase(
            change: card(2) { $0["pan"] = "4761000010000009" },
            message: "cards[2] \"card-visa-session\": the card number ending 0009 is used by another card"),
        BadCase(
            change: card(3) { $0["expiry"] = "2030-03" },
            message: "cards[3] \"card-mc-decline\": \"expiry\" must be MM/YY"),
        BadCase(
            change: card(3) { $0["cvc"] = "12" }, message: "cards[3] \"card-mc-decline\": \"cvc\" must be 3 or 4 digits"
        ),
        BadCase(
            change: card(4) { $0["accountId"] = "acc-nobody" },
            message: "cards[4] \"card-visa-stepup\": account \"acc-nobody\" is not in \"accounts\""),
        BadCase(
            change: card(3) { $0["digitization"] = ["rule": "decline", "reason": ""] },
            message: "cards[3] \"card-mc-decline\" digitization: a decline needs a \"reason\""),
        // A decline whose reason no message could carry was approved by the TSP's stand-in.
        BadCase(
            change: card(3) { $0["digitization"] = ["rule": "decline", "reason": String(repeating: "R", count: 501)] },
            message: "cards[3] \"card-mc-decline\" digitization: \"reason\" has 501 characters; at most 500"),
        // One character with thousands of combining marks is one character of many bytes.
        BadCase(
            change: card(3) {
                $0["digitization"] = [
                    "rule": "decline", "reason": "e" + String(repeating: "\u{301}", count: 3000),
                ]
            },
            message: "cards[3] \"card-mc-decline\" digitization: \"reason\" has 6001 bytes of UTF-8; at most 2000"),
        BadCase(
            change: card(3) { $0["cardholderName"] = String(repeating: "N", count: 101) },
            message: "cards[3] \"card-mc-decline\": \"cardholderName\" has 101 characters; at most 100"),
        BadCase(
            change: card(4) { $0["digitization"] = ["rule": "step-up", "idv": [["type": "APP_TO_APP"]]] },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[0]: APP_TO_APP needs \"appIdentifier\""),
        BadCase(
            change: card(5) {
                $0["digitization"] = [
                    "rule": "by-score", "approveAtMost": 4, "stepUpAtMost": 2, "idv": [["type": "OTP_SMS"]],
                ]
            },
            message: "cards[5] \"card-mc-score\" digitization: scores run from 1 to 5"),
        BadCase(
            change: card(0) { $0["digitization"] = ["rule": "maybe"] },
            message: "cards[0].digitization.rule: unknown rule 'maybe'"),
        // The accepted values are named, not only the one that is wrong.
        BadCase(
            change: card(4) { $0["digitization"] = ["rule": "step-up", "idv": [["type": "TELEPATHY"]]] },
            message: "cards[4].digitization.idv[0].type: unknown ID&V method \"TELEPATHY\"; the methods are "
                + "OTP_SMS, OTP_EMAIL, APP_TO_APP, CALL_CENTER"),
        BadCase(change: card(0) { $0.removeValue(forKey: "cvc") }, message: "cards[0]: missing \"cvc\""),
        BadCase(change: card(0) { $0["expiry"] = 1229 }, message: "cards[0].expiry: expected a string"),
        BadCase(
            change: { json in
                var issuer = json["issuer"] as! [String: Any]
                issuer["binRanges"] = [["low": "4761", "high": "476199"]]
                json["issuer"] = issuer
            },
            message: "issuer.binRanges[0]: low and high differ in length"),
        // Ranges that share a card number, of one length or of two, are refused with both named.
        BadCase(
            change: { json in
                var issuer = json["issuer"] as! [String: Any]
                issuer["binRanges"] = [["low": "540000", "high": "540099"], ["low": "540050", "high": "540150"]]
                json["issuer"] = issuer
            },
            message: "issuer.binRanges[1]: 540050 to 540150 overlaps issuer.binRanges[0] (540000 to 540099); each "
                + "prefix belongs in one range only"),
        BadCase(
            change: { json in
                var issuer = json["issuer"] as! [String: Any]
                var ranges = issuer["binRanges"] as! [[String: Any]]
                ranges.append(["low": "4761", "high": "4761"])
                issuer["binRanges"] = ranges
                json["issuer"] = issuer
            },
            message: "issuer.binRanges[3]: 4761 to 4761 overlaps issuer.binRanges[0] (476100 to 476199)"),
        BadCase(
            change: { json in
                var accounts = json["accounts"] as! [[String: Any]]
                accounts[1]["cardholderId"] = "ch-ghost"
                json["accounts"] = accounts
            },
            message: "accounts[1] \"acc-alice-credit\": cardholder \"ch-ghost\" is not in \"cardholders\""),
        BadCase(
            change: { json in
                var holders = json["cardholders"] as! [[String: Any]]
                holders[2]["email"] = "chloe.example.net"
                json["cardholders"] = holders
            },
            message: "cardholders[2] \"ch-chloe\": \"email\" is not an email address"),
        // Stored as given, in the clear: a card number typed into a contact field would sit in the database.
        BadCase(
            change: cardholder(0) { $0["phone"] = "4761000020000023" },
            message: "cardholders[0] \"ch-alice\": \"phone\" has 16 digits; a phone number has at most 15 (E.164)"),
        BadCase(
            change: cardholder(0) { $0["phone"] = "+4 7610 0020 0009" },
            message: "cardholders[0] \"ch-alice\": \"phone\" holds a card number"),
        BadCase(
            change: cardholder(0) { $0["email"] = "alice.4761000020000023@example.com" },
            message: "cardholders[0] \"ch-alice\": \"email\" holds a card number"),
        BadCase(
            change: cardholder(0) { $0["name"] = "Alice 4761000020000023" },
            message: "cardholders[0] \"ch-alice\": \"name\" holds a card number"),
        // Keys the format does not have are refused rather than skipped: a typo must not change a card silently.
        BadCase(
            change: card(0) { $0["notEligibleReson"] = "closed" },
            message: "cards[0] \"card-visa-approve\": unknown key \"notEligibleReson\" (known: id, accountId,"),
        BadCase(
            change: card(0) { $0["digitization"] = ["rule": "approve", "idv": [["type": "OTP_SMS"]]] },
            message: "cards[0] \"card-visa-approve\" digitization: unknown key \"idv\" (known: rule)"),
        BadCase(
            change: card(4) {
                $0["digitization"] = ["rule": "step-up", "idv": [["type": "OTP_SMS", "destination": "x"]]]
            },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[0]: unknown key \"destination\""),
        BadCase(
            change: { json in
                var issuer = json["issuer"] as! [String: Any]
                issuer["callCentreNumber"] = issuer.removeValue(forKey: "callCenterNumber")
                json["issuer"] = issuer
            },
            message: "issuer: unknown key \"callCentreNumber\""),
        // What the TSP would refuse to register is refused at load: the node said READY, then retried for ever.
        BadCase(
            change: issuer { $0["id"] = "4761000010000009" },
            message: "issuer: \"id\" must be free of card numbers"),
        BadCase(
            change: issuer { $0["id"] = "bank with spaces" },
            message: "issuer: \"id\" must be 1 to 64 characters without spaces, control or format characters"),
        BadCase(
            change: issuer { $0["name"] = String(repeating: "n", count: 101) },
            message: "issuer: \"name\" must be 1 to 100 characters without control or format characters"),
        BadCase(
            change: issuer { issuer in
                issuer["binRanges"] = (0..<1_001).map { ["low": String(100_000 + $0), "high": String(100_000 + $0)] }
            },
            message: "issuer: \"binRanges\" holds 1001 ranges; the TSP takes at most 1000"),
        // Texts the parties show in full hold no card number: a decline's reason reached the CLI unmasked.
        BadCase(
            change: card(3) { $0["digitization"] = ["rule": "decline", "reason": "card 2223000010000047 is closed"] },
            message: "cards[3] \"card-mc-decline\" digitization: the decline's \"reason\" holds a card number"),
        BadCase(
            change: card(0) { $0["notEligibleReason"] = "see 4761000010000009" },
            message: "cards[0] \"card-visa-approve\": \"notEligibleReason\" holds a card number"),
        BadCase(
            change: issuer { $0["callCenterNumber"] = "4761000010000009" },
            message: "issuer: \"callCenterNumber\" holds a card number"),
        BadCase(
            change: card(4) {
                $0["digitization"] = [
                    "rule": "step-up",
                    "idv": [
                        [
                            "type": "APP_TO_APP", "appIdentifier": "a", "appAction": "b",
                            "appName": "Bank 5400000010000037",
                        ]
                    ],
                ]
            },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[0]: \"appName\" holds a card number"),
        // The app's identifier and action reach the wallet as they are.
        BadCase(
            change: card(4) {
                $0["digitization"] = [
                    "rule": "step-up",
                    "idv": [["type": "APP_TO_APP", "appIdentifier": "com.bank.4761000010000009", "appAction": "b"]],
                ]
            },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[0]: \"appIdentifier\" holds a card number"),
        BadCase(
            change: card(4) {
                $0["digitization"] = [
                    "rule": "step-up",
                    "idv": [["type": "APP_TO_APP", "appIdentifier": "a", "appAction": "go 4761000010000009"]],
                ]
            },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[0]: \"appAction\" holds a card number"),
        // A type listed twice was offered twice under one method id.
        BadCase(
            change: card(4) {
                $0["digitization"] = ["rule": "step-up", "idv": [["type": "OTP_SMS"], ["type": "OTP_SMS"]]]
            },
            message: "cards[4] \"card-visa-stepup\" digitization.idv[1]: OTP_SMS is listed twice"),
        // A number that is no integer is named where it is: it was "the fixture is not valid JSON".
        BadCase(
            change: card(5) {
                $0["digitization"] = [
                    "rule": "by-score", "approveAtMost": 2.5, "stepUpAtMost": 4, "idv": [["type": "OTP_SMS"]],
                ]
            },
            message: "cards[5].digitization.approveAtMost: expected an integer"),
        BadCase(
            change: card(0) { $0["id"] = "card visa" },
            message: "cards[0]: \"id\" must be 1 to 64 characters without spaces"),
        BadCase(
            change: card(0) { $0["id"] = "4761000040000078" },
            message: "cards[0]: \"id\" must be free of card numbers"),
    ]

    static func cardholder(_ index: Int, _ body: @escaping @Sendable (inout [String: Any]) -> Void)
        -> @Sendable (inout [String: Any]) -> Void
    { entry("cardholders", index, body) }

    static func issuer(_ body: @escaping @Sendable (inout [String: Any]) -> Void)
        -> @Sendable (inout [String: Any]) -> Void
    {
        { json in
            var issuer = json["issuer"] as! [String: Any]
            body(&issuer)
            json["issuer"] = issuer
        }
    }

    /// Phone numbers as long as E.164 allows load, although their grouped digits read as a card number to the
    /// log masking; only their digits as a card number are refused.
    @Test(arguments: ["+86 138 0013 8000", "+49 30 1234 5678 901", "+4 7610 0020 0008"])
    func longPhoneNumbersLoad(_ phone: String) throws {
        var json = try Support.fixtureJSON()
        Self.cardholder(0) { $0["phone"] = phone }(&json)
        let fixture = try IssuerFixture.parse(try JSONSerialization.data(withJSONObject: json))
        #expect(fixture.cardholders.first?.phone == phone)
    }

    @Test(arguments: badCases)
    func badFixtureNamesTheEntry(_ bad: BadCase) throws {
        var json = try Support.fixtureJSON()
        bad.change(&json)
        let data = try JSONSerialization.data(withJSONObject: json)
        let error = #expect(throws: IssuerError.self) { try IssuerFixture.parse(data) }
        #expect(error?.code == .fixture)
        #expect(error?.message.hasPrefix(bad.message) == true, "got: \(error?.message ?? "")")
        // A wrong card number is named by its last four digits at most.
        #expect(error?.message.contains("4761000010000008") == false)
        #expect(error?.message.contains("4111111111111111") == false)
    }

    /// A key given twice in one object is refused with its place named (Foundation's decoder kept one of the two
    /// values without a word), as is a trailing comma, which it accepts; a repeated key that looks like a card
    /// number is masked.
    @Test(arguments: [
        (
            #""id": "tokenet-bank","#, #""id": "tokenet-bank", "callCenterNumber": "0","#,
            #""issuer.callCenterNumber" appears twice; give each key once"#
        ),
        (
            #""id": "card-visa-approve","#, #""id": "card-visa-approve", "cvc": "000","#,
            #""cards[0].cvc" appears twice"#
        ),
        (
            #""id": "card-visa-approve","#,
            #""4761000010000009": 1, "4761000010000009": 2, "id": "card-visa-approve","#,
            #""cards[0].************0009" appears twice"#
        ),
        (#"{"rule": "approve"}"#, #"{"rule": "approve",}"#, "not valid JSON: trailing comma before '}' at byte "),
    ])
    func aRepeatedKeyOrATrailingCommaIsRefused(original: String, replacement: String, message: String) throws {
        let text = try String(contentsOfFile: Support.fixturePath, encoding: .utf8)
        let place = try #require(text.range(of: original))
        let error = #expect(throws: IssuerError.self) {
            try IssuerFixture.parse(Data(text.replacingCharacters(in: place, with: replacement).utf8))
        }
        #expect(error?.code == .fixture)
        #expect(error?.message.hasPrefix(message) == true, "got: \(error?.message ?? "")")
        #expect(error?.message.contains("4761000010000009") == false)
    }

    @Test func binRangesOverlapWhenACardNumberFitsBoth() {
        func range(_ low: String, _ high: String) -> IssuerFixture.BINRange { .init(low: low, high: high) }
        let visa = range("476100", "476199")
        #expect(visa.overlaps(visa))
        #expect(visa.overlaps(range("476199", "476299")) && range("476199", "476299").overlaps(visa))
        #expect(visa.overlaps(range("4761", "4761")) && range("4761", "4761").overlaps(visa))
        #expect(visa.overlaps(range("47619912", "47619912")))
        #expect(range("4700", "4799").overlaps(range("476100", "476199")))
        #expect(!visa.overlaps(range("476200", "476299")) && !range("476200", "476299").overlaps(visa))
        #expect(!visa.overlaps(range("4760", "4760")) && !visa.overlaps(range("4762", "4799")))
        #expect(!visa.overlaps(range("47620000", "47629999")))
    }

    @Test func notJSONAndMissingFileAreClear() throws {
        let notJSON = #expect(throws: IssuerError.self) { try IssuerFixture.parse(Data("{cards".utf8)) }
        // Where the JSON goes wrong, so that a person can find it in a long file.
        #expect(notJSON?.message == "not valid JSON: expected a member name in quotes at byte 1")
        let missing = #expect(throws: IssuerError.self) { try IssuerFixture.load(path: "/nonexistent/issuer.json") }
        #expect(
            missing?.message
                == "--fixtures /nonexistent/issuer.json does not exist; give the fixture's JSON file, such as "
                + "Tools/fixtures/issuer.json")
        // Foundation's `NSCocoaErrorDomain Code=256 "(null)"` for a directory said nothing a person could act on.
        let directory = FileManager.default.temporaryDirectory.path
        let folder = #expect(throws: IssuerError.self) { try IssuerFixture.load(path: directory) }
        #expect(folder?.code == .fixture)
        #expect(
            folder?.description
                == "--fixtures \(directory) is a directory; give the fixture's JSON file, such as Tools/fixtures/issuer.json"
        )
        // A pipe or a device was "Permission denied", even to root.
        let device = #expect(throws: IssuerError.self) { try IssuerFixture.load(path: "/dev/null") }
        #expect(device?.message.hasPrefix("--fixtures /dev/null is a device, not a file; write the fixture's") == true)
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID()).fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let pipe = #expect(throws: IssuerError.self) { try IssuerFixture.load(path: fifo) }
        #expect(pipe?.message.hasPrefix("--fixtures \(fifo) is a pipe (a FIFO, or a shell's <(…)), not a file") == true)
    }
}
