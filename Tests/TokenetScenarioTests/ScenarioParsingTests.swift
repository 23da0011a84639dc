import Foundation
import Testing
import TokenetFaults
import TokenetScenario
import TokenetWire

@Suite struct ScenarioParsingTests {
    @Test func everyStepParses() throws {
        let script = """
            # a comment, then a blank line

            call issuer tokenet.issuer.v1.IssuerControl/PushCard {"cardId": "c1", "mode": "PUSH_MODE_SESSION"}
            save session pushSessionId
            call wallet tokenet.wallet.v1.WalletControl/AddCard {"pushSessionId": "${session}"}
            expect OK {"eligible": true}
            save card cardRef
            save first cards[0].cardRef
              fault tsp->issuer partition to-client
            fault wallet->tsp delay 1.5s
            fault issuer->wallet reset
            kill wallet
            stop tsp
            start tsp
            start wallet
            deadline 2s
            sleep 250ms
            echo card ${card}
            call tsp tokenet.tsp.v1.TspControl/ListTokens
            expect within 10s not_found "no token"
            """
        let scenario = try Scenario.parse(script, source: "s.scenario")
        #expect(scenario.source == "s.scenario")
        #expect(
            scenario.steps == [
                ScenarioStep(
                    line: 3,
                    .call(
                        ScenarioCall(
                            party: .issuer, method: "tokenet.issuer.v1.IssuerControl/PushCard",
                            request: #"{"cardId": "c1", "mode": "PUSH_MODE_SESSION"}"#,
                            saves: [.init(name: "session", field: JSONPath([.key("pushSessionId")]), line: 4)]))),
                ScenarioStep(
                    line: 5,
                    .call(
                        ScenarioCall(
                            party: .wallet, method: "tokenet.wallet.v1.WalletControl/AddCard",
                            request: #"{"pushSessionId": "${session}"}"#,
                            expectation: ScenarioExpectation(code: .ok, contains: #"{"eligible": true}"#, line: 6),
                            saves: [
                                .init(name: "card", field: JSONPath([.key("cardRef")]), line: 7),
                                .init(
                                    name: "first", field: JSONPath([.key("cards"), .index(0), .key("cardRef")]),
                                    line: 8),
                            ]))),
                ScenarioStep(
                    line: 9, .fault(ScenarioLink(from: .tsp, to: .issuer), .set(.partition, only: .toClient))),
                ScenarioStep(
                    line: 10, .fault(ScenarioLink(from: .wallet, to: .tsp), .set(.delay(.milliseconds(1500))))),
                ScenarioStep(line: 11, .fault(ScenarioLink(from: .issuer, to: .wallet), .reset)),
                ScenarioStep(line: 12, .kill(.wallet)),
                ScenarioStep(line: 13, .stop(.tsp)),
                ScenarioStep(line: 14, .start(.tsp)),
                ScenarioStep(line: 15, .start(.wallet)),
                ScenarioStep(line: 16, .deadline(.seconds(2))),
                ScenarioStep(line: 17, .sleep(.milliseconds(250))),
                ScenarioStep(line: 18, .echo("card ${card}")),
                ScenarioStep(
                    line: 19,
                    .call(
                        ScenarioCall(
                            party: .tsp, method: "tokenet.tsp.v1.TspControl/ListTokens", request: "{}",
                            expectation: ScenarioExpectation(
                                code: .notFound, messageContains: "no token", within: .seconds(10), line: 20)))),
            ])
        #expect(scenario.controlsProcesses)
        #expect(!(try Scenario.parse("call tsp a.B/C", source: "x")).controlsProcesses)
    }

    /// Each bad line is refused with the source, its line number and what would be accepted.
    @Test(arguments: [
        ("bogus step", "s:1: unknown step 'bogus' (steps: call, expect"),
        ("call", "s:1: call: expected a party (tsp, issuer or wallet), got nothing"),
        ("call bank a.B/C", "s:1: call: expected a party (tsp, issuer or wallet), got 'bank'"),
        // Status codes are read in any case; steps and parties are lower case, and a capital is named as the mistake.
        ("Call tsp a.B/C", "s:1: unknown step 'Call': steps are written in lower case; write 'call'"),
        ("call TSP a.B/C", "s:1: call: got 'TSP': parties are written in lower case; write 'tsp'"),
        ("call tsp", "s:1: call tsp needs a method"),
        ("call tsp ListTokens", "s:1: call: 'ListTokens' is not a method"),
        ("expect OK", "s:1: expect must follow the call it checks"),
        ("save x y", "s:1: save must follow the call"),
        ("call tsp a.B/C\nexpect OK\nexpect OK", "s:3: the call on line 1 already has an expect line"),
        ("call tsp a.B/C\nsleep 1s\nexpect OK", "s:3: expect must follow the call it checks"),
        (
            "call tsp a.B/C\nexpect FINE",
            "s:2: expect: expected a status code (OK, NOT_FOUND, UNAVAILABLE, …), got 'FINE'"
        ),
        (
            "call tsp a.B/C\nexpect within OK",
            "s:2: expect within: expected a duration such as 250ms, 2s, 1.5s or 2m; got 'OK'"
        ),
        ("call tsp a.B/C\nexpect OK {\"a\": ", "s:2: expect OK takes one JSON object;"),
        ("call tsp a.B/C\nexpect OK [1]", "s:2: expect OK takes a JSON object, not an array"),
        (
            "call tsp a.B/C\nexpect NOT_FOUND \"no token",
            "s:2: expect NOT_FOUND: the message text opens a quote that the line does not close"
        ),
        (
            "call tsp a.B/C\nexpect NOT_FOUND \"no token\\\"",
            "s:2: expect NOT_FOUND: the message text opens a quote that the line does not close"
        ),
        ("call tsp a.B/C\nexpect NOT_FOUND \"", "s:2: expect NOT_FOUND: the message text opens a quote"),
        ("call tsp a.B/C\nsave 9x a", "s:2: save NAME FIELD: '9x' is not a name"),
        ("call tsp a.B/C\nsave x a..b", "s:2: save x FIELD: 'a..b' is not a field"),
        ("call tsp a.B/C\nsave x", "s:2: save x FIELD: '' is not a field"),
        // A response is a message: a path does not start with an element.
        ("call tsp a.B/C\nsave x 5", "s:2: save x FIELD: '5' is not a field"),
        ("call tsp a.B/C\nsave x [0].a", "s:2: save x FIELD: '[0].a' is not a field"),
        ("call tsp a.B/C {\"id\": \"${nope}\"}", "s:1: ${nope} is not saved by an earlier line (save nope FIELD)"),
        ("echo ${later}\ncall tsp a.B/C\nsave later x", "s:1: ${later} is not saved by an earlier line"),
        ("fault tsp-issuer partition", "s:1: fault: 'tsp-issuer' is not a link (links: tsp->issuer, issuer->tsp"),
        ("fault tsp->wallet partition", "s:1: fault: 'tsp->wallet' is not a link"),
        (
            "fault tsp->issuer drop",
            "s:1: fault tsp->issuer: unknown command 'drop' (commands: none | heal | delay DURATION | partition (each "
                + "optionally to-server or to-client) | refuse | reset)"
        ),
        (
            "fault tsp->issuer",
            "s:1: fault tsp->issuer: expected a command (commands: none | heal | delay DURATION | partition (each "
                + "optionally to-server or to-client) | refuse | reset)"
        ),
        ("fault tsp->issuer status", "s:1: fault tsp->issuer: status is for tokenet proxy's console"),
        ("start tsp", "s:1: start tsp: tsp-node is running (stop or kill it first)"),
        ("pause tsp\nstart tsp", "s:2: start tsp: tsp-node is paused (resume it, or kill it first)"),
        ("stop tsp\nkill tsp", "s:2: kill tsp: tsp-node is not running (start it first)"),
        ("stop", "s:1: stop: expected a party (tsp, issuer or wallet), got nothing"),
        ("stop tsp extra", "s:1: stop tsp: unexpected 'extra' after the party"),
        ("await events", "s:1: await: 'events' is not watched by an earlier line (watch events PARTY METHOD)"),
        ("watch 1x wallet a.B/C", "s:1: watch NAME PARTY METHOD: '1x' is not a name"),
        ("watch e bank a.B/C", "s:1: watch: expected a party (tsp, issuer or wallet), got 'bank'"),
        ("watch e wallet Listen", "s:1: watch e: 'Listen' is not a method"),
        ("watch e wallet a.B/C\nawait e [1]", "s:2: await takes a JSON object, not an array"),
        ("watch e wallet a.B/C\nawait e within soon", "s:2: await within: expected a duration"),
        ("watch e wallet a.B/C\nawait e\nexpect OK", "s:3: expect checks a call; an await line says what it waits for"),
        ("join a", "s:1: join: 'a' is not a call spawned by an earlier line and not joined yet"),
        ("join", "s:1: join needs the NAME of a spawned call"),
        ("spawn a wallet a.B/C\necho x", "s:1: spawn a is never joined; add 'join a' where its outcome counts"),
        ("spawn a wallet a.B/C\nspawn a tsp a.B/C", "s:2: spawn a: the call spawned on line 1 is not joined yet"),
        ("spawn 1a wallet a.B/C", "s:1: spawn NAME PARTY METHOD: '1a' is not a name"),
        ("spawn a bank a.B/C", "s:1: spawn: expected a party (tsp, issuer or wallet), got 'bank'"),
        ("spawn a wallet Listen", "s:1: spawn a: 'Listen' is not a method"),
        ("spawn a wallet a.B/C\nexpect OK", "s:2: expect must follow the call it checks"),
        ("spawn a wallet a.B/C\njoin a\njoin a", "s:3: join: 'a' is not a call spawned by an earlier line"),
        (
            "spawn a wallet a.B/C\njoin a\nexpect within 1s OK",
            "s:3: expect within calls again, and a spawned call is made once; drop 'within'"
        ),
        ("spawn a wallet a.B/C\njoin a\nexpect OK\nexpect OK", "s:4: the join on line 2 already has an expect line"),
        ("resume tsp", "s:1: resume tsp: tsp-node is not paused"),
        ("pause tsp\npause tsp", "s:2: pause tsp: tsp-node is already paused"),
        ("pause tsp\nstop tsp", "s:2: stop tsp: tsp-node is paused and could not drain (resume it first, or kill it)"),
        ("kill tsp\npause tsp", "s:2: pause tsp: tsp-node is not running (start it first)"),
        ("pause tsp\nkill tsp\nresume tsp", "s:3: resume tsp: tsp-node is not running (start it first)"),
        ("header x-a", "s:1: header: expected 'KEY: VALUE' or 'clear', got 'x-a'"),
        ("header : v", "s:1: header: expected 'KEY: VALUE' or 'clear', got ': v'"),
        (
            "identity admin",
            "s:1: identity: expected operator, tsp, issuer or wallet, or ROLE/ID for an identity of its own "
                + "(wallet/my-wallet), got 'admin'"
        ),
        ("identity bank/my-bank", "s:1: identity bank/my-bank: the role must be operator, tsp, issuer or wallet"),
        ("identity wallet/", "s:1: identity wallet/: the ID after wallet/ is empty"),
        ("identity wallet/ca", "s:1: identity wallet/ca: 'ca' names a certificate the PKI has anyway"),
        ("identity wallet/issuer", "s:1: identity wallet/issuer: 'issuer' names a certificate the PKI has anyway"),
        ("identity wallet/a/b", "s:1: identity wallet/a/b: the ID may hold only ASCII letters, digits, '.', '_'"),
        ("identity wallet/my wallet", "s:1: identity wallet/my wallet: the ID may hold only ASCII letters"),
        (
            "identity wallet/" + String(repeating: "c", count: 65),
            "s:1: identity wallet/" + String(repeating: "c", count: 33) + "…: the ID is 65 bytes long; at most 64"
        ),
        // One certificate file per ID: the second role would have presented the first one's.
        (
            "identity wallet/shared\nidentity issuer/shared",
            "s:2: identity issuer/shared: the ID shared is wallet/shared's in this script; give this identity another"
        ),
        // Another role's ID in the PKI: Tools/gen-certs refused to make its certificate as the run reached the line.
        (
            "identity issuer/wallet-1",
            "s:1: identity issuer/wallet-1: the ID wallet-1 is wallet/wallet-1's, whose certificate the PKI has anyway "
                + "(wallet.pem); give this identity another"
        ),
        ("identity wallet/operator-1", "s:1: identity wallet/operator-1: the ID operator-1 is operator/operator-1's"),
        ("identity operator/tsp-1", "s:1: identity operator/tsp-1: the ID tsp-1 is tsp/tsp-1's"),
        // Tools/gen-certs compares IDs without case (one file where names ignore case), and refused these as the
        // run reached them.
        (
            "identity wallet/Wallet-1",
            "s:1: identity wallet/Wallet-1: the ID Wallet-1 differs only in case from wallet/wallet-1's, whose "
                + "certificate the PKI has anyway (wallet.pem); give this identity another, or write wallet/wallet-1 for "
                + "that one"
        ),
        (
            "identity issuer/WALLET-1",
            "s:1: identity issuer/WALLET-1: the ID WALLET-1 differs only in case from wallet/"
        ),
        ("identity wallet/CA", "s:1: identity wallet/CA: 'CA' names a certificate the PKI has anyway"),
        ("identity wallet/.x", "s:1: identity wallet/.x: '.x' starts with '.', which Tools/gen-certs refuses"),
        ("identity wallet/Issuer", "s:1: identity wallet/Issuer: 'Issuer' names a certificate the PKI has anyway"),
        ("identity wallet/x.pem", "s:1: identity wallet/x.pem: 'x.pem' ends as the PKI's file names do (.pem, .key)"),
        ("identity wallet/x.KEY", "s:1: identity wallet/x.KEY: 'x.KEY' ends as the PKI's file names do"),
        (
            "identity wallet/W2\nidentity wallet/w2",
            "s:2: identity wallet/w2: the ID w2 differs only in case from wallet/W2's in this script; give this "
                + "identity another"
        ),
        ("identity wallet/W2\nidentity issuer/w2", "s:2: identity issuer/w2: the ID w2 differs only in case from"),
        // encrypt's card data is an object, which a JSON string would hold as text.
        (
            "encrypt card 4761000010000009 12/29\ncall tsp a.B/C {\"encryptedCardData\": \"${card}\"}",
            "s:2: ${card} is the card data encrypt made, a JSON object: write it without quotes, as in "
                + "\"encryptedCardData\": ${card}"
        ),
        (
            "encrypt card 4761000010000009",
            "s:1: encrypt: expected NAME CARD_NUMBER MM/YY [CVC]: a name, the card number's 12 to 19 digits without "
                + "spaces, the expiry and, if the card has one, its security code"
        ),
        ("encrypt 1card 4761000010000009 12/29", "s:1: encrypt: '1card' is not a name"),
        ("encrypt card 4761-0000-1000-0009 12/29", "s:1: encrypt: the card number must be 12 to 19 digits"),
        ("encrypt card 47610000100000091234 12/29", "s:1: encrypt: the card number must be 12 to 19 digits"),
        ("encrypt card 4761000010000009 13/29", "s:1: encrypt: the expiry month 13 is not a month; use 01 to 12"),
        ("encrypt card 4761000010000009 12/29 12", "s:1: encrypt: the security code (CVC) must be 3 or 4 digits"),
        ("encrypt card 4761000010000009 12/29 123 x", "s:1: encrypt: expected NAME CARD_NUMBER MM/YY [CVC]"),
        ("call tsp a.B/C\nsave x a match (", "s:2: save x a match: '(' is not a regular expression"),
        ("call tsp a.B/C\nsave x a like b", "s:2: save x a: expected 'match REGEX' or the end of the line"),
        ("call tsp a.B/C\nsave x a match", "s:2: save x a: expected 'match REGEX' or the end of the line"),
        ("sleep forever", "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got 'forever'"),
        (
            "deadline 601s",
            "s:1: deadline: expected a duration of at most 10 minutes, such as 250ms, 2s, 1.5s or 2m; got '601s'"
        ),
        ("sleep", "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got nothing"),
        // A value that is no duration is not blamed on the limit, and what to write instead is said.
        (
            "sleep 5",
            "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got '5' (with a unit: 5s for seconds)"
        ),
        ("deadline 5", "s:1: deadline: expected a duration such as 250ms, 2s, 1.5s or 2m; got '5' (with a unit: 5s"),
        (
            "call tsp a.B/C\nexpect within 5 OK",
            "s:2: expect within: expected a duration such as 250ms, 2s, 1.5s or 2m; got '5' (with a unit: 5s"
        ),
        (
            "watch w wallet a.B/C\nawait w within 5",
            "s:2: await within: expected a duration such as 250ms, 2s, 1.5s or 2m; got '5' (with a unit: 5s"
        ),
        (
            "sleep 0",
            "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got '0' (with a unit: 0s for seconds)"
        ),
        (
            "sleep 1S",
            "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got '1S' (units are lower case: 1s)"
        ),
        ("sleep 2 s", "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got '2 s' (without spaces: 2s)"),
        ("sleep 1s1s", "s:1: sleep: expected a duration such as 250ms, 2s, 1.5s or 2m; got '1s1s' (each unit once,"),
        ("deadline 0", "s:1: deadline: expected a duration above 0, such as 250ms or 2s; got '0'"),
        ("sleep 0.0000001s", "s:1: sleep: '0.0000001s' is shorter than 1us, the finest duration a script keeps"),
        // Really over the limit: the limit is named.
        ("sleep 1h", "s:1: sleep: expected a duration of at most 10 minutes, such as 250ms, 2s, 1.5s or 2m; got '1h'"),
        ("sleep -5", "s:1: sleep: a duration cannot be negative; expected one such as 250ms, 2s, 1.5s or 2m, got '-5'"),
        // Help asked for at the console is pointed to, rather than refused as an unknown step.
        ("help", "s:1: steps are written as in a scenario file (steps: "),
        // A negative duration is named as such, not as one over the limit.
        (
            "sleep -1s",
            "s:1: sleep: a duration cannot be negative; expected one such as 250ms, 2s, 1.5s or 2m, got '-1s'"
        ),
        (
            "call tsp a.B/C\nexpect within -1s OK",
            "s:2: expect within: a duration cannot be negative; expected one such as 250ms, 2s, 1.5s or 2m, got '-1s'"
        ),
        // Every call below would end while connecting, before reaching the node.
        ("deadline 0s", "s:1: deadline: expected a duration above 0, such as 250ms or 2s; got '0s'"),
        ("deadline 0ms", "s:1: deadline: expected a duration above 0, such as 250ms or 2s; got '0ms'"),
        (
            "call tsp tokenet.tsp.v1.TspControl/ListTokens\nexpect within 0s OK",
            "s:2: expect within: expected a duration above 0, such as 250ms or 2s; got '0s'"
        ),
    ])
    func badLinesAreNamed(script: String, message: String) {
        let error = #expect(throws: ScenarioError.self) { try Scenario.parse(script, source: "s") }
        #expect(error?.message.hasPrefix(message) == true, "\(error?.message ?? "no error")")
    }

    /// `check` names each refused line and goes on as if the line had done what it was meant to: a refused
    /// call's expect and save lines pass, the names refused lines save count as saved, a refused stop leaves its
    /// node stopped; the steps it took are returned.
    @Test func checkNamesEachMistakeAndNotItsEchoes() {
        let checked = Scenario.check(
            """
            Call tsp a.B/C
            expect OK
            save id x
            echo ${id}
            save loose y
            encrypt card 4761 12/29
            call tsp a.B/C {"data": ${card}}
            stop tsp later
            start tsp
            spawn s bank a.B/C
            join s
            expect OK
            watch w wallet a.B/C
            await w {}
            echo ${missing}
            """, source: "s")
        #expect(
            checked.mistakes.map(\.line) == [1, 5, 6, 8, 10, 15], "\(checked.mistakes.map(\.error.message))")
        #expect(checked.mistakes.allSatisfy { $0.error.message.hasPrefix("s:\($0.line): ") })
        #expect(checked.scenario.steps.map(\.line) == [4, 7, 9, 11, 13, 14, 15])
        // The first mistake is what `parse` throws.
        let first = #expect(throws: ScenarioError.self) { try Scenario.parse("Call tsp a.B/C\nbogus", source: "s") }
        #expect(first?.message.hasPrefix("s:1: unknown step 'Call'") == true)
    }

    /// A misspelt step is most likely a call: its expect and save lines are not named as well. A spawn left
    /// unjoined is named beside other mistakes, unless a refused line may have been its join. A name saved by no
    /// line is named once, with a saved name close to it.
    @Test func checkPassesOverTheEchoesOfAMisspeltStepAndNamesIndependentMistakes() {
        let typo = Scenario.check(
            """
            calll wallet a.B/C
            expect OK {}
            save c cards[0].cardRef
            echo ${c}
            """, source: "s")
        #expect(typo.mistakes.map(\.line) == [1], "\(typo.mistakes.map(\.error.message))")
        let unjoined = Scenario.check(
            """
            spawn slow wallet a.B/C
            sleep 5q
            call tsp a.B/C
            """, source: "s")
        #expect(unjoined.mistakes.map(\.line) == [1, 2], "\(unjoined.mistakes.map(\.error.message))")
        #expect(unjoined.mistakes.first?.error.message.contains("spawn slow is never joined") == true)
        let misspeltJoin = Scenario.check("spawn slow wallet a.B/C\njoinn slow\n", source: "s")
        #expect(misspeltJoin.mistakes.map(\.line) == [2], "\(misspeltJoin.mistakes.map(\.error.message))")
        let names = Scenario.check(
            """
            call issuer a.B/C
            save sesion pushSessionId
            call wallet a.B/C {"pushSessionId": "${session}"}
            call wallet a.B/C {"pushSessionId": "${session}"}
            """, source: "s")
        #expect(names.mistakes.map(\.line) == [3], "\(names.mistakes.map(\.error.message))")
        #expect(
            names.mistakes.first?.error.message
                == "s:3: ${session} is not saved by an earlier line (save session FIELD); did you mean ${sesion}?")
        // The call refused for that name alone is taken as written, with its expect line, which is then checked.
        let expected = Scenario.check(
            """
            call wallet a.B/C {"cardRef": "${crad}"}
            expect OK {"decision": "X"}
            expect OK
            """, source: "s")
        #expect(expected.mistakes.map(\.line) == [1, 3], "\(expected.mistakes.map(\.error.message))")
        guard case .call(let call)? = expected.scenario.steps.first?.action else {
            Issue.record("no call step: \(expected.scenario.steps)")
            return
        }
        #expect(call.expectation.contains == #"{"decision": "X"}"#)
    }

    /// A script of nothing but mistakes is named up to the limit, and the rest is said to be unchecked.
    @Test func checkStopsAtItsLimit() {
        let checked = Scenario.check(String(repeating: "bogus\n", count: 30), source: "s", limit: 3)
        #expect(checked.mistakes.map(\.line) == [1, 2, 3, 3])
        #expect(
            checked.mistakes.last?.error.message == "s:3: 3 mistakes so far; the lines after this one are not checked")
    }

    /// `encrypt` keeps the card's fields for the run and saves its name, which later lines may use in JSON.
    @Test func encryptSavesItsName() throws {
        let scenario = try Scenario.parse(
            """
            identity wallet/my-wallet.2_b
            encrypt card 4761000010000009 12/29 123
            encrypt plain 5555555555554444 01/30
            call tsp tokenet.tsp.v1.Provisioning/CheckEligibility {"encryptedCardData": ${card}}
            """, source: "s")
        #expect(
            scenario.steps.dropFirst().prefix(2).map(\.action) == [
                .encrypt(
                    ScenarioEncrypt(
                        name: "card", cardNumber: "4761000010000009", expiry: "12/29", securityCode: "123")),
                .encrypt(ScenarioEncrypt(name: "plain", cardNumber: "5555555555554444", expiry: "01/30")),
            ])
        #expect(!scenario.controlsProcesses)
        #expect(scenario.steps.first?.action == .identity("wallet/my-wallet.2_b"))
        #expect(Scenario.ownIdentity("wallet/my-wallet.2_b")?.id == "my-wallet.2_b")
        #expect(Scenario.ownIdentity("wallet/my-wallet.2_b")?.role == "wallet")
        // The same identity again, a saved value of the same name in a string: both fine.
        _ = try Scenario.parse(
            """
            identity wallet/a
            identity operator
            identity wallet/a
            encrypt card 4761000010000009 12/29
            call tsp a.B/C {"encryptedCardData": ${card}}
            save card cardRef
            call tsp a.B/C {"cardRef": "${card}"}
            """, source: "s")
    }

    /// An expect line taken back (the console's run refused its object) is as if never typed: the next one is the
    /// call's, or the join's, expect line.
    @Test func aWithdrawnExpectLineLeavesRoomForAnother() throws {
        var parser = Scenario.Parser()
        for (call, number) in [("call tsp a.B/C", 1), ("spawn s tsp a.B/C\njoin s", 4)] {
            var line = number
            for text in call.split(separator: "\n") {
                _ = try parser.read(line: String(text), number: line)
                line += 1
            }
            #expect(try parser.read(line: #"expect OK {"a": 1}"#, number: line) != .none)
            parser.withdrawExpectation()
            let effect = try parser.read(line: #"expect OK {"b": 2}"#, number: line + 1)
            #expect(effect == .expectation(ScenarioExpectation(code: .ok, contains: #"{"b": 2}"#, line: line + 1)))
            #expect(throws: ScenarioError.self) { try parser.read(line: "expect OK", number: line + 2) }
        }
    }

    /// A paused node killed from outside, as the console learns of it (`nodesRunning`), is not running: `resume`
    /// says so and `start` brings it back, where `resume` said it "is not paused".
    @Test func aPausedNodeThatEndedIsDownAtTheConsole() throws {
        var parser = Scenario.Parser()
        _ = try parser.read(line: "pause wallet", number: 1)
        parser.nodesRunning([.tsp, .issuer])
        #expect {
            try parser.read(line: "resume wallet", number: 2)
        } throws: {
            ($0 as? ScenarioError)?.message == "2: resume wallet: wallet-node is not running (start it first)"
        }
        #expect(try parser.read(line: "start wallet", number: 3) != .none)
    }

    /// A role's own ID in the PKI (`wallet/wallet-1`) is that role's certificate, which the run presents as is.
    @Test func theRolesOwnIDsAreIdentities() throws {
        let scenario = try Scenario.parse(
            "identity wallet/wallet-1\nidentity operator/operator-1\nidentity issuer/issuer-1\nidentity tsp/tsp-1",
            source: "s")
        #expect(
            scenario.steps.map(\.action) == [
                .identity("wallet/wallet-1"), .identity("operator/operator-1"), .identity("issuer/issuer-1"),
                .identity("tsp/tsp-1"),
            ])
        #expect(Scenario.ownIdentity("tsp/tsp-1")?.id == Scenario.pkiID(of: "tsp"))
    }

    /// `spawn` starts a call that `join` judges later, with the expect and save lines that follow the join; a
    /// name may be spawned again once joined.
    @Test func spawnedCallsAreJoinedWithTheirExpectations() throws {
        let scenario = try Scenario.parse(
            """
            spawn race wallet a.B/C {"x": 1}
            call tsp d.E/F
            join race
            expect FAILED_PRECONDITION DEACTIVATED
            save why x
            spawn race tsp a.B/C
            join race
            """, source: "s")
        let call = ScenarioCall(party: .wallet, method: "a.B/C", request: #"{"x": 1}"#)
        #expect(scenario.steps.first?.action == .spawn(ScenarioSpawn(name: "race", call: call)))
        guard case .join(let join) = scenario.steps[2].action else {
            Issue.record("expected a join, got \(scenario.steps[2].action)")
            return
        }
        #expect(join.name == "race")
        #expect(join.expectation.code == .failedPrecondition && join.expectation.messageContains == "DEACTIVATED")
        #expect(join.saves.map(\.name) == ["why"])
        #expect(scenario.steps.count == 5)
        #expect(!scenario.controlsProcesses)
        // At a console, the expect typed after a join is its expectation.
        var parser = Scenario.Parser()
        _ = try parser.read(line: "spawn a wallet a.B/C", number: 1)
        _ = try parser.read(line: "join a", number: 2)
        #expect(
            try parser.read(line: "expect NOT_FOUND", number: 3)
                == .expectation(ScenarioExpectation(code: .notFound, line: 3)))
    }

    @Test func anUndefinedNameIsItsOwnCode() {
        let error = #expect(throws: ScenarioError.self) { try Scenario.parse("echo ${x}", source: "s") }
        #expect(error?.code == .undefinedVariable)
        let syntax = #expect(throws: ScenarioError.self) { try Scenario.parse("nope", source: "s") }
        #expect(syntax?.code == .syntax)
    }

    @Test func messageTextMayBeQuotedAndOKJSONMayUseNames() throws {
        let scenario = try Scenario.parse(
            """
            call tsp a.B/C
            save id x
            expect NOT_FOUND "no \\"token\\" here"
            call tsp a.B/D
            expect OK {"id": "${id}"}
            call tsp a.B/E
            expect ABORTED plain text, unquoted
            """, source: "s")
        guard case .call(let first) = scenario.steps[0].action, case .call(let second) = scenario.steps[1].action,
            case .call(let third) = scenario.steps[2].action
        else {
            Issue.record("expected three calls")
            return
        }
        #expect(first.expectation.messageContains == #"no "token" here"#)
        #expect(second.expectation.contains == #"{"id": "${id}"}"#)
        #expect(third.expectation.messageContains == "plain text, unquoted")
    }

    @Test func windowsLineEndingsAndTrailingBlanksAreFine() throws {
        let scenario = try Scenario.parse("call tsp a.B/C  \r\nexpect NOT_FOUND\r\n\r\necho x\r\n", source: "s")
        #expect(
            scenario.steps == [
                ScenarioStep(
                    line: 1,
                    .call(
                        ScenarioCall(
                            party: .tsp, method: "a.B/C", request: "{}",
                            expectation: ScenarioExpectation(code: .notFound, line: 2)))),
                ScenarioStep(line: 4, .echo("x")),
            ])
        let error = #expect(throws: ScenarioError.self) { try Scenario.parse("echo a\r\nbogus\r\n", source: "s") }
        #expect(error?.message.hasPrefix("s:2: unknown step 'bogus'") == true)
    }

    /// Only LF, CRLF and CR end a line: a U+2028 inside a JSON string, or a form feed, split the line there, and
    /// the line numbers of errors no longer matched the editor's.
    @Test func otherUnicodeLineBreaksDoNotEndALine() throws {
        let scenario = try Scenario.parse(
            "call tsp a.B/C {\"body\": \"one\u{2028}two\"}\rexpect NOT_FOUND\necho page\u{0C}two", source: "s")
        #expect(scenario.steps.map(\.line) == [1, 3])
        guard case .call(let call) = scenario.steps.first?.action else {
            Issue.record("not a call: \(scenario.steps)")
            return
        }
        #expect(call.request == "{\"body\": \"one\u{2028}two\"}")
        let error = #expect(throws: ScenarioError.self) {
            try Scenario.parse("echo page one\u{0C}page two\nfrobnicate\n", source: "s")
        }
        #expect(error?.message.hasPrefix("s:2: unknown step 'frobnicate'") == true, "\(String(describing: error))")
    }

    @Test func aSaveMayKeepWhatARegularExpressionMatches() throws {
        let scenario = try Scenario.parse(
            "call issuer a.B/Outbox\nsave code messages[0].text match is (\\d{6})\\.\nsave all n match \\d+",
            source: "s")
        guard case .call(let call) = scenario.steps.first?.action, call.saves.count == 2 else {
            Issue.record("expected one call with two saves")
            return
        }
        let code = call.saves[0]
        #expect(code.pattern == #"is (\d{6})\."#)
        #expect(try code.extract(from: .string("Your code is 042917. It expires soon.")).get() == .string("042917"))
        // Without a group, the whole match; numbers are matched as their text.
        #expect(try call.saves[1].extract(from: .number("12345")).get() == .string("12345"))
        guard case .failure(let error) = code.extract(from: .string("no code here")) else {
            Issue.record("expected no match")
            return
        }
        #expect(error.message == #"/is (\d{6})\./ does not match "no code here""#)
        guard case .failure(let kind) = code.extract(from: .bool(true)) else {
            Issue.record("expected a kind error")
            return
        }
        #expect(kind.message == #"messages[0].text is a boolean, not text to match /is (\d{6})\./"#)
        // Without a pattern the value is kept whole, whatever its kind.
        let plain = ScenarioCall.Save(name: "x", field: JSONPath([.key("a")]), line: 1)
        #expect(try plain.extract(from: .bool(true)).get() == .bool(true))
    }

    /// A match that backtracks without end gives up at its limit, or as soon as it is told to stop, instead of
    /// holding its thread.
    @Test(.timeLimit(.minutes(3))) func aRunawayMatchGivesUp() throws {
        let save = ScenarioCall.Save(name: "t", field: JSONPath([.key("text")]), pattern: "^(a+)+$", line: 3)
        let text = JSONValue.string(String(repeating: "a", count: 60) + "!")
        guard case .failure(let error) = save.extract(from: text, limit: .milliseconds(200)) else {
            Issue.record("expected the match to give up")
            return
        }
        #expect(error.code == .regexTimeLimit)
        #expect(error.message.hasPrefix("/^(a+)+$/ did not finish matching text within 200ms"), "\(error.message)")
        let stopped = save.extract(from: text, limit: .seconds(600)) { true }
        #expect((try? stopped.get()) == nil)
        // ICU's syntax: a group that takes no part in the match keeps an empty text.
        let optional = ScenarioCall.Save(name: "o", field: JSONPath([.key("a")]), pattern: "x(y)?", line: 1)
        #expect(try optional.extract(from: .string("x")).get() == .string(""))
    }

    @Test func watchesAwaitsAndIdentitiesParse() throws {
        let scenario = try Scenario.parse(
            """
            identity issuer
            watch events wallet tokenet.wallet.v1.WalletEvents/Listen
            identity operator
            header x-request-id: 42
            header clear
            await events
            await events within 5s {"kind": "K"}
            save seq sequence
            echo ${seq}
            """, source: "s")
        #expect(
            scenario.steps == [
                ScenarioStep(line: 1, .identity("issuer")),
                ScenarioStep(
                    line: 2,
                    .watch(
                        ScenarioWatch(
                            name: "events", party: .wallet, method: "tokenet.wallet.v1.WalletEvents/Listen",
                            request: "{}"))),
                ScenarioStep(line: 3, .identity("operator")),
                ScenarioStep(line: 4, .header("x-request-id: 42")),
                ScenarioStep(line: 5, .header(nil)),
                ScenarioStep(line: 6, .await(ScenarioAwait(name: "events"))),
                ScenarioStep(
                    line: 7,
                    .await(
                        ScenarioAwait(
                            name: "events", within: .seconds(5), contains: #"{"kind": "K"}"#,
                            saves: [.init(name: "seq", field: JSONPath([.key("sequence")]), line: 8)]))),
                ScenarioStep(line: 9, .echo("${seq}")),
            ])
        #expect(!scenario.controlsProcesses)
    }

    @Test func pausedNodesResumeOrAreKilled() throws {
        let scenario = try Scenario.parse(
            "pause tsp\nresume tsp\npause tsp\nkill tsp\nstart tsp\npause wallet", source: "s")
        #expect(
            scenario.steps.map(\.action) == [
                .pause(.tsp), .resume(.tsp), .pause(.tsp), .kill(.tsp), .start(.tsp), .pause(.wallet),
            ])
        #expect(scenario.controlsProcesses)
    }

    /// A script of blank lines and comments alone is refused: it passed as "0 steps … OK", a success that tested
    /// nothing.
    @Test(arguments: ["", "\n\n", "# all of it commented out\n#call tsp tokenet.health.v1.Health/Check\n"])
    func aScriptWithNoStepsIsRefused(text: String) {
        #expect {
            try Scenario.parse(text, source: "empty.scenario")
        } throws: { error in
            (error as? ScenarioError)?.message.hasPrefix("empty.scenario: has no steps, only blank lines and comments")
                == true
        }
    }

    /// A byte order mark, which some editors write at the start of a UTF-8 file, is not part of the first step.
    @Test func aByteOrderMarkBeforeTheFirstLineIsSkipped() throws {
        let scenario = try Scenario.parse("\u{FEFF}echo hi\nsleep 1s\n", source: "s.scenario")
        #expect(scenario.steps == [ScenarioStep(line: 1, .echo("hi")), ScenarioStep(line: 2, .sleep(.seconds(1)))])
        var parser = Scenario.Parser()
        #expect(try parser.read(line: "\u{FEFF}echo hi", number: 1) == .step(ScenarioStep(line: 1, .echo("hi"))))
        // Only before the first line: elsewhere it is a character like any other, and no step starts with it.
        #expect(throws: ScenarioError.self) { try Scenario.parse("echo hi\n\u{FEFF}echo hi\n", source: "s") }
    }

    /// Each save line of one call costs the same, however many came before it: the call's saves were copied on each,
    /// and a script of 100,000 save lines took minutes to check. Told by how the time grows, not by a time limit (a
    /// loaded machine took 25 times as long as an idle one): sixteen times the lines take about sixteen times as
    /// long when each costs the same, and 256 times as long when each costs as much as the lines before it. The
    /// two sizes are timed in turn, the quickest of each kept, so that a burst of load slows both alike; the limit
    /// leaves room for a loaded machine's (27x at an 8x ratio, 3.4 times the 8 expected, in one full suite).
    ///
    /// Timed in the CPU time of the thread that parses, not on the clock: on a loaded machine the short parse ran
    /// whole within one turn on a CPU while the long one shared its CPU with the load, and the clock's ratio came
    /// out at 122x, over the limit, for work that grew linearly.
    @Test(.timeLimit(.minutes(3))) func manySavesOfOneCallParseInLinearTime() throws {
        func script(_ count: Int) -> String {
            "call tsp tokenet.tsp.v1.TspControl/ListTokens\n" + (0..<count).map { "save v\($0) tokens\n" }.joined()
        }
        func threadCPUTime() -> Duration {
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
        }
        // Synchronous, so the parse runs on this thread from start to end.
        func parseTime(_ text: String) throws -> Duration {
            let started = threadCPUTime()
            _ = try Scenario.parse(text, source: "s.scenario")
            return threadCPUTime() - started
        }
        let count = 32_000
        let (smallScript, largeScript) = (script(count / 16), script(count))
        var (small, large) = (Duration.seconds(3600), Duration.seconds(3600))
        for _ in 0..<4 {
            small = min(small, try parseTime(smallScript))
            large = min(large, try parseTime(largeScript))
        }
        #expect(large / small < 100, "\(count / 16) save lines took \(small), \(count) took \(large)")
        let scenario = try Scenario.parse(largeScript, source: "s.scenario")
        guard case .call(let call) = scenario.steps.first?.action else {
            Issue.record("not a call")
            return
        }
        #expect(call.saves.count == count)
        #expect(call.saves.last?.name == "v\(count - 1)")
    }
}
