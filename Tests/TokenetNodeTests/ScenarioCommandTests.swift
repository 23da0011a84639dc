import Foundation
import FoundationXML
import Testing
import TokenetTestSupport
import TokenetTransport

/// Runs the built `tokenet scenario` on scripts: the examples in Tools/scenarios must pass as written, a step whose
/// outcome differs ends the run at its line, and a wrong script is refused before any node starts. One test at a
/// time: each starts three nodes, and all at once starved the suite's timing-sensitive tests of CPU.
@Suite(.serialized) struct ScenarioCommandTests {
    static let examples = [
        "Tools/scenarios/issuer-cut-off.scenario", "Tools/scenarios/wallet-offline.scenario",
        "Tools/scenarios/step-up-otp.scenario", "Tools/scenarios/wallet-events.scenario",
        "Tools/scenarios/strong-auth.scenario", "Tools/scenarios/app-to-app.scenario",
        "Tools/scenarios/otp-answer-lost.scenario", "Tools/scenarios/step-up-again.scenario",
        "Tools/scenarios/issuer-restart-stepup.scenario", "Tools/scenarios/own-wallet.scenario",
        "Tools/scenarios/lifecycle-race.scenario", "Tools/scenarios/key-rotation.scenario",
    ]

    /// Runs `script` from a file of its own.
    static func run(_ script: String) async throws -> ProcessResult {
        let directory = try TemporaryDirectory()
        let file = directory.path("test.scenario")
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        return try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
    }

    @Test func theExamplesPass() async throws {
        let files = Self.examples.map(PackageRoot.path)
        // Twelve sandboxes one after the other take about 100 s on two idle cores and more under a full parallel
        // run, which the usual 120 s bound cut short: the bound is for a run that hangs.
        let result = try await LaunchedProcess.runNiced(
            "tokenet", ["scenario"] + files + ["--timeout", "60"], limit: 600)
        #expect(result.reason == .exit, "killed after 600 s; stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("All 12 scenarios passed."))
        // Two calls raced: the spawned suspend, held up on its link, lost to the operator's delete.
        #expect(
            result.stdout.contains(
                "join suspend: call wallet tokenet.wallet.v1.WalletLifecycle/ChangeCardState -> FAILED_PRECONDITION"))
        // The partition held the TSP's decision past its issuer deadline, and the stand-in declined.
        #expect(result.stdout.contains("fault tsp->issuer: in force: partition"))
        #expect(result.stdout.contains("save reason = \"the issuer did not answer"))
        // The wallet was killed and started again; the TSP drained and came back.
        #expect(result.stdout.contains("kill wallet: wallet-node pid="))
        #expect(result.stdout.contains("was killed by signal 9"))
        #expect(result.stdout.contains("start wallet: ready wallet-node"))
        #expect(result.stdout.contains("stop tsp: tsp-node pid="))
        // The one-time code was read from the issuer's outbox text.
        #expect(result.stdout.range(of: #"save code = "[0-9]{6}""#, options: .regularExpression) != nil)
        // Each sandbox's three nodes stopped cleanly at the end, and the stopped TSP once more.
        // The issuer's watch of the wallet's events saw the token added, suspended and resumed.
        #expect(result.stdout.contains("watch events: wallet tokenet.wallet.v1.WalletEvents/Listen open"))
        #expect(result.stdout.contains("events from sequence 1 on"))
        // The app locked after five wrong PINs and opened again once the issuer unlocked it.
        #expect(result.stdout.contains("1 try left before the app locks"))
        // The wallet heard of the activation whose answer was lost.
        #expect(result.stdout.contains("fault wallet->tsp: in force: to-server none, to-client partition"))
        // The step-up left waiting was replaced when the card was added again, and could not be verified any more.
        #expect(result.stdout.contains("is DEACTIVATED; ID&V is only for an INACTIVE token"))
        // The issuer killed mid step-up could not have the code sent; back on its data, it sent it.
        #expect(result.stdout.contains("the issuer could not deliver the code (UNAVAILABLE)"))
        // A wallet of one's own, with a certificate made for it, encrypted its cards to the sandbox TSP's key.
        #expect(result.stdout.contains("made by Tools/gen-certs (tokenet://wallet/my-wallet)"))
        #expect(result.stdout.contains("encrypt card: the card ending 0009 (12/29) for the TSP's key "))
        #expect(result.stdout.contains("save token = \"DNITHE"))
        // The TSP's key was rotated.
        #expect(result.stdout.contains(" is retired\n"))
        // Three nodes a scenario, and the nodes stopped and started again within them.
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 38)
    }

    /// A line refused as it runs (its request, made with a saved value, does not fit its type) sent no call: the
    /// failure is the line's, with no search of the nodes' logs for a call that was never made.
    @Test func aLineRefusedAsItRunsIsNotLookedForInTheLogs() async throws {
        let result = try await Self.run(
            """
            call tsp tokenet.health.v1.Health/Check {"service": ""}
            save s status
            call tsp tokenet.tsp.v1.TspControl/ListTokens {"pageSize": ${s}}
            """)
        #expect(result.status == 2, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stderr.contains("FAILED at line 3: "), "\(result.stderr)")
        #expect(result.stderr.contains("request is not a valid tokenet.tsp.v1.ListTokensRequest"), "\(result.stderr)")
        #expect(!result.stderr.contains("logged"), "\(result.stderr)")
    }

    /// An `encrypt` step against a TSP a step stopped says so as a call does: the way back is a step.
    @Test func anEncryptStepWithTheTSPStoppedNamesTheStepThatStartsIt() async throws {
        let result = try await Self.run(
            """
            stop tsp
            encrypt card 4761000010000009 12/29
            echo not reached
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains("encrypt card: the TSP's encryption key could not be read: UNAVAILABLE: "),
            "\(result.stderr)")
        #expect(
            result.stderr.contains("; the tsp-node is not running: a 'start tsp' step starts it again"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("give the address it listens on"), "\(result.stderr)")
        #expect(!result.stderr.contains("4761000010000009") && !result.stdout.contains("not reached"))
    }

    @Test func aStepThatDiffersEndsTheRunAtItsLine() async throws {
        let result = try await Self.run(
            """
            kill issuer
            call issuer tokenet.health.v1.Health/Check {"service": ""}
            expect UNAVAILABLE "connect"
            call tsp tokenet.tsp.v1.TspControl/ListTokens
            expect OK {"tokens": [{"state": "TOKEN_STATE_ACTIVE"}]}
            echo not reached
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("call issuer tokenet.health.v1.Health/Check -> UNAVAILABLE: cannot connect"))
        // The way back from a node a step killed is a step, not another address.
        #expect(
            result.stdout.contains("; the issuer-node is not running: a 'start issuer' step starts it again"),
            "\(result.stdout)")
        #expect(!result.stdout.contains("give the address it listens on"), "\(result.stdout)")
        #expect(
            result.stderr.contains(
                #"FAILED at line 5: tokens: expected [{"state":"TOKEN_STATE_ACTIVE"}], got [] (left out, as proto3 JSON leaves a default)"#
            ), "\(result.stderr)")
        #expect(!result.stdout.contains("not reached"))
        // The failed call's path through the nodes, from their logs.
        #expect(result.stderr.contains("What the nodes logged for trace "), "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "tsp-node: call method=/tokenet.tsp.v1.TspControl/ListTokens peer=tokenet://operator/operator-1 status=OK"
            ))
        // The two nodes still running are stopped cleanly; the killed one is not stopped twice.
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 2)
        #expect(result.stderr.contains("Rerun with --keep-dir"))
    }

    /// `within` bounds each call it makes: one call held by a partition kept the line for its whole deadline (here
    /// the issuer deadline's 5 s, then the stand-in's decline), past the `within 1s` it was given. Within the second
    /// the TSP gives the issuer what the wallet's deadline leaves and, that short, decides nothing (UNAVAILABLE, with
    /// the deadline its stand-in needs); on a loaded machine the second may end first (DEADLINE_EXCEEDED).
    @Test func aCallUnderWithinEndsWhenWithinEnds() async throws {
        let result = try await Self.run(
            """
            call issuer tokenet.issuer.v1.IssuerControl/PushCard {"cardId": "card-visa-approve", "mode": "PUSH_MODE_SESSION"}
            save session pushSessionId
            call wallet tokenet.wallet.v1.WalletControl/AddCard {"pushSessionId": "${session}"}
            save card cardRef
            fault tsp->issuer partition
            deadline 30s
            call wallet tokenet.wallet.v1.WalletControl/AcceptTerms {"cardRef": "${card}"}
            expect within 1s OK {"decision": "PROVISIONING_DECISION_APPROVED"}
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains("FAILED at line 8: expected OK, got DEADLINE_EXCEEDED")
                || result.stderr.contains("FAILED at line 8: expected OK, got UNAVAILABLE"), "\(result.stderr)")
    }

    /// `within` makes a call that changes something again only while it fails: one that ended OK had done its work,
    /// and a repeat answered "already done", which passed a line expecting that refusal (a suspend of an ACTIVE
    /// token passed `expect within 5s FAILED_PRECONDITION`).
    @Test func withinDoesNotRepeatACallThatChangedSomething() async throws {
        let result = try await Self.run(
            """
            call issuer tokenet.issuer.v1.IssuerControl/PushCard {"cardId": "card-visa-approve", "mode": "PUSH_MODE_SESSION"}
            expect within 5s FAILED_PRECONDITION
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains(
                "FAILED at line 2: expected FAILED_PRECONDITION, got OK; tokenet.issuer.v1.IssuerControl/PushCard "
                    + "changes what it acts on (its .proto does not declare it free of side effects), so within "
                    + "makes it again only while it fails, and this call ended OK"), "\(result.stderr)")
    }

    /// The sandbox's own identities written as ROLE/ID (`wallet/wallet-1`) are its certificates of the role: the run
    /// asked Tools/gen-certs for a wallet-1.pem, which it refused beside wallet.pem. Another role with such an ID is
    /// refused by `--check`.
    @Test func theSandboxsOwnIdentitiesAreItsCertificates() async throws {
        let result = try await Self.run(
            """
            identity wallet/wallet-1
            encrypt card 4761000010000009 12/29 123
            call tsp tokenet.tsp.v1.Provisioning/CheckEligibility {"requestId": "w1-check", "eligibilityData": {"language": "en", "inputMethod": "INPUT_METHOD_MANUAL"}, "walletAccountId": "w1-account", "device": {"deviceId": "w1-phone", "deviceType": "PHONE"}, "encryptedCardData": ${card}}
            expect OK {"eligible": true}
            identity operator/operator-1
            call tsp tokenet.tsp.v1.TspControl/ListTokens
            """)
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("    1  identity wallet/wallet-1 for the calls below (wallet.pem)\n"))
        #expect(!result.stdout.contains("made by Tools/gen-certs"), "\(result.stdout)")

        let directory = try TemporaryDirectory()
        let file = directory.path("clash.scenario")
        try "echo a\nidentity issuer/wallet-1\n".write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stderr.hasPrefix(
                "tokenet: scenario: \(file):2: identity issuer/wallet-1: the ID wallet-1 is wallet/wallet-1's, whose "
                    + "certificate the PKI has anyway (wallet.pem); give this identity another\n"),
            "\(check.stderr)")
    }

    /// A request written out is checked against its type before any node starts; one that only fits or not once
    /// its `${NAME}`s are filled in is checked as it runs, and is the script's error too.
    @Test func aRequestThatDoesNotFitItsTypeIsTheScriptsError() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("request.scenario")
        try "echo first\ncall tsp tokenet.tsp.v1.TspControl/ListTokens {\"walletAccount\": 1}\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let early = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
        #expect(early.status == 2, "stdout:\n\(early.stdout)\nstderr:\n\(early.stderr)")
        #expect(
            early.stderr.contains(
                "\(file):2: call: request is not a valid tokenet.tsp.v1.ListTokensRequest: unknown field \"walletAccount\""
            ), "\(early.stderr)")
        #expect(early.stdout.isEmpty, "no node started: \(early.stdout)")

        try """
        call tsp tokenet.health.v1.Health/Check {"service": ""}
        save status status
        call tsp tokenet.tsp.v1.TspControl/ListTokens {"walletAccountId": ${status}}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
        #expect(result.status == 2, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains("FAILED at line 3: call: request is not a valid tokenet.tsp.v1.ListTokensRequest"),
            "\(result.stderr)")
    }

    /// A card number typed where it does not belong (an enum name, a field name, a number) is quoted in the error
    /// with all but its last four digits masked: the message quotes what was typed, and goes to a terminal or a
    /// CI log.
    @Test func aRequestErrorMasksACardNumber() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("pan.scenario")
        let method = "tokenet.tsp.v1.TokenLifecycle/ChangeTokenState"
        let type = "tokenet.tsp.v1.ChangeTokenStateRequest"
        for (request, message) in [
            (
                #"{"action": "4761000010000009"}"#,
                #"\#(type).action: "************0009" is not a value of tokenet.tsp.v1.LifecycleAction"#
            ),
            (#"{"4761-0000-1000-0009": "x"}"#, #"unknown field "****-****-****-0009" in \#(type)"#),
            (#"{"action": 4761000010000009}"#, "\(type).action: ************0009 is out of range"),
        ] {
            try "call tsp \(method) \(request)\n".write(toFile: file, atomically: true, encoding: .utf8)
            let result = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
            #expect(result.status == 2, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
            #expect(
                result.stderr.contains("\(file):1: call: request is not a valid \(type): \(message)"),
                "\(result.stderr)")
            for digits in ["4761000010000009", "4761-0000-1000-0009"] {
                #expect(!result.stderr.contains(digits) && !result.stdout.contains(digits), "\(result.stderr)")
            }
        }
    }

    @Test func aWrongScriptIsRefusedBeforeAnyNodeStarts() async throws {
        let directory = try TemporaryDirectory()
        let good = directory.path("good.scenario")
        let bad = directory.path("bad.scenario")
        try "call tsp tokenet.tsp.v1.TspControl/ListTokens\nexpect OK\n".write(
            toFile: good, atomically: true, encoding: .utf8)
        try "# fine\ncall tsp tokenet.tsp.v1.TspControl/ListTokens\nsave id tokens[0].digitalCardId\nstart tsp\n"
            .write(toFile: bad, atomically: true, encoding: .utf8)

        let result = try await LaunchedProcess.runNiced("tokenet", ["scenario", good, bad])
        #expect(result.status == 2)
        #expect(result.stderr.contains("scenario: \(bad):4: start tsp: tsp-node is running"), "\(result.stderr)")
        #expect(!result.stdout.contains("ready"), "\(result.stdout)")

        let standardInput = try await offThePool { () throws -> ProcessResult in
            let process = try SpawnedProcess(
                try BuiltExecutables.url(of: "tokenet").path, ["scenario", "-", "--check"], standardInput: .file(bad),
                standardOutput: .nullDevice, standardError: .pipe)
            let text = String(decoding: process.standardError!.readDataToEndOfFile(), as: UTF8.self)
            let termination = process.waitUntilExit(killingAfter: 60)
            return ProcessResult(status: termination.status, reason: termination.reason, stdout: "", stderr: text)
        }
        #expect(standardInput.status == 2)
        #expect(standardInput.stderr.contains("scenario: stdin:4: start tsp: tsp-node is running"))

        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", good])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout == "\(good): 1 step, 1 call: OK\n")

        for (arguments, message) in [
            ([String](), "scenario: name at least one scenario FILE"),
            (["--fast", good], "scenario: unknown option '--fast'"),
            ([directory.path("missing.scenario")], "scenario: \(directory.path("missing.scenario")) does not exist"),
            ([directory.url.path], "scenario: \(directory.url.path) is a directory"),
            (["-", "-"], "scenario: standard input (-) can be read only once"),
            (["--timeout", "0", good], "scenario: --timeout: expected seconds above 0"),
            // A folder that takes no file is found before any node starts, not once the scenarios have run.
            (["--junit", "/proc/report.xml", good], "scenario: --junit /proc/report.xml: the folder /proc cannot be"),
        ] {
            let refused = try await LaunchedProcess.runNiced("tokenet", ["scenario"] + arguments)
            #expect(refused.status == 2, "\(arguments)")
            #expect(refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
    }

    /// A service no node of this build serves, one the party named does not serve, and a watch of a method that
    /// answers once, are refused by `--check` as well; they failed only as the step ran (UNIMPLEMENTED, "answers
    /// once"). A call that expects UNIMPLEMENTED may ask the wrong node on purpose.
    @Test(arguments: [
        ("call wallet tokenet.nope.v1.X/Y {}", "call: no node serves a service named tokenet.nope.v1.X"),
        (
            "call tsp Health/Check {}",
            "call: no node serves a service named Health; did you mean tokenet.health.v1.Health?"
        ),
        (
            "watch w wallet tokenet.health.v1.Health/Check {}",
            "watch: /tokenet.health.v1.Health/Check answers once; call it instead"
        ),
        (
            "call tsp tokenet.wallet.v1.WalletControl/ListCards {}",
            "call tsp: tokenet.wallet.v1.WalletControl is served by the wallet-node, not the tsp-node; "
                + "write call wallet tokenet.wallet.v1.WalletControl/ListCards"
        ),
        // A scenario's line has no -d, which the count of its requests named.
        (
            #"call tsp tokenet.health.v1.Health/Check {"service": ""} {"service": ""}"#,
            "call: /tokenet.health.v1.Health/Check takes exactly one request message; the line holds 2"
        ),
        (
            "spawn a wallet tokenet.wallet.v1.WalletControl/ListCardz {}\njoin a",
            "spawn: tokenet.wallet.v1.WalletControl has no method ListCardz (its methods: AddCard, AcceptTerms, "
                + "ListCards, SyncWithTsp)"
        ),
        (
            "watch ev issuer tokenet.wallet.v1.WalletEvents/Listen {}",
            "watch issuer: tokenet.wallet.v1.WalletEvents is served by the wallet-node, not the issuer-node; "
                + "write watch ev wallet tokenet.wallet.v1.WalletEvents/Listen"
        ),
    ])
    func anUnknownServiceOrAWatchOfAUnaryMethodIsRefusedByCheck(line: String, message: String) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("typo.scenario")
        try (line + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.hasPrefix("tokenet: scenario: \(file):1: \(message)\n"), "\(check.stderr)")
        guard line.hasPrefix("call tsp tokenet.wallet") else { return }
        try (line + "\nexpect UNIMPLEMENTED\n").write(toFile: file, atomically: true, encoding: .utf8)
        let onPurpose = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(onPurpose.status == 0, "\(onPurpose.stdout)\(onPurpose.stderr)")
    }

    /// An expected object that does not fit the response type failed only when the run reached it, after the steps
    /// before it and the call itself had run; `--check` passed it.
    @Test(arguments: [
        (
            "call tsp tokenet.health.v1.Health/Check\nexpect OK {\"status\": \"SERVING_STATUS_SERVNG\"}", 2,
            #""SERVING_STATUS_SERVNG" is not a value of tokenet.health.v1.ServingStatus"#
        ),
        (
            "call tsp tokenet.health.v1.Health/Check\nexpect OK {\"note\": \"x\"}", 2,
            #"unknown field "note" in tokenet.health.v1.HealthCheckResponse"#
        ),
        (
            "watch h tsp tokenet.health.v1.Health/Watch\necho x\nawait h within 1s {\"stauts\": 1}", 3,
            #"unknown field "stauts" in tokenet.health.v1.HealthCheckResponse"#
        ),
    ])
    func anExpectedObjectThatDoesNotFitTheResponseIsRefusedByCheck(
        script: String, line: Int, message: String
    ) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("expect.scenario")
        try (script + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stderr.hasPrefix("tokenet: scenario: \(file):\(line): the expected object is not a "),
            "\(check.stderr)")
        #expect(check.stderr.contains(message), "\(check.stderr)")
    }

    /// A save after a call that answers once and is to end with another code than OK could never succeed (such a
    /// call returns no response): `--check` passed it, and the run failed "the call returned no response". A stream
    /// may send messages before its error, and is left to the run.
    @Test(arguments: [
        ("call tsp \(ScenarioCommandTests.history)\nexpect NOT_FOUND\nsave x token.state", 3, 2, "NOT_FOUND"),
        ("call tsp \(ScenarioCommandTests.history)\nsave x token.state\nexpect within 2s NOT_FOUND", 2, 3, "NOT_FOUND"),
        (
            "spawn h tsp \(ScenarioCommandTests.history)\njoin h\nexpect PERMISSION_DENIED\nsave x token.state", 4, 3,
            "PERMISSION_DENIED"
        ),
        ("call tsp tokenet.health.v1.Health/Watch\nexpect DEADLINE_EXCEEDED\nsave s status", 0, 0, ""),
    ])
    func aSaveAfterAUnaryCallThatFailsIsRefusedByCheck(
        script: String, line: Int, expectLine: Int, code: String
    ) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("save.scenario")
        try (script + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        guard line > 0 else {
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            return
        }
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stderr.hasPrefix(
                "tokenet: scenario: \(file):\(line): save x token.state: tokenet.tsp.v1.TspControl/TokenHistory answers "
                    + "once, and a call of it that ends \(code) (line \(expectLine)) returns no response to save from; "
                    + "save from a call that ends OK\n"),
            "\(check.stderr)")
    }

    static let history = #"tokenet.tsp.v1.TspControl/TokenHistory {"digitalCardId": "x"}"#

    /// A card number the script wrote in a save's path, or as the ID of an identity of its own, is refused with the
    /// number masked: the path's error quoted it, and the ID went into the run's output, a file name and a
    /// certificate.
    @Test(arguments: [
        (
            "call tsp tokenet.tsp.v1.TspControl/TokenHistory {\"digitalCardId\": \"x\"}\nsave y token.x4761000010000009",
            2, "save y token.x************0009: tokenet.tsp.v1.TokenSummary has no field 'x************0009'"
        ),
        (
            "identity wallet/4761000010000009\ncall tsp tokenet.tsp.v1.TspControl/ListTokens", 1,
            "identity wallet/************0009: the ID holds a card number; choose another ID"
        ),
        // A word cut to 40 characters is cut before the number: its first ten digits, too few to mask, were shown.
        (
            "echo a\n" + String(repeating: "y", count: 30) + "4761000010000009 x", 2,
            "unknown step '" + String(repeating: "y", count: 30) + "…' (steps: "
        ),
    ])
    func aCardNumberInAPathOrAnIdentityIsRefusedMasked(script: String, line: Int, message: String) async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("card.scenario")
        try (script + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.hasPrefix("tokenet: scenario: \(file):\(line): \(message)"), "\(check.stderr)")
        #expect(!check.stderr.contains("4761000010000009"), "\(check.stderr)")
    }

    /// `--check` names a mistake in every script given, each by its line: a misspelt `save` field (found only once
    /// the nodes had started), a line that is not UTF-8 (named without a line), an unknown step; with several
    /// scripts, only the first one's mistake was told.
    @Test func checkNamesEachScriptsMistakeByItsLine() async throws {
        let directory = try TemporaryDirectory()
        let save = directory.path("save.scenario")
        try "call tsp tokenet.tsp.v1.TspControl/ListTokens\nsave st tokens[0].stat\n".write(
            toFile: save, atomically: true, encoding: .utf8)
        let bytes = directory.path("bytes.scenario")
        try Data("echo a\necho b\u{FF}\n".utf8.map { $0 == 0xC3 ? 0xFF : $0 }).write(to: URL(fileURLWithPath: bytes))
        let step = directory.path("step.scenario")
        try "calll tsp x\n".write(toFile: step, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", save, bytes, step])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        let lines = check.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(check.stderr)")
        #expect(
            lines.first?.hasPrefix(
                "tokenet: scenario: \(save):2: save st tokens[0].stat: tokenet.tsp.v1.TokenSummary has no field 'stat' "
                    + "(it has digitalCardId, ") == true, "\(check.stderr)")
        #expect(
            lines.dropFirst().first
                == "tokenet: scenario: \(bytes):2: the line is not UTF-8 text; save the script as UTF-8")
        #expect(lines.dropFirst(2).first?.hasPrefix("tokenet: scenario: \(step):1: unknown step 'calll'") == true)
    }

    /// Writes `lines` to `name` in `directory` and runs `tokenet scenario FILE --check` on it: the file's path, the
    /// result, and the lines of its standard error that start with "tokenet: " (the mistakes named).
    static func check(_ lines: [String], as name: String, in directory: TemporaryDirectory) async throws
        -> (file: String, result: ProcessResult, errors: [String])
    {
        let file = directory.path(name)
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        let errors = result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("tokenet: ") }
        return (file, result, errors)
    }

    /// `--check` names every mistake of a script in line order, those of its lines and those of its requests, and
    /// none that only follows from another: a refused call's expect and save lines, and the value it saves, pass.
    @Test func checkNamesEveryMistakeOfAScript() async throws {
        let (file, check, lines) = try await Self.check(
            [
                "call bank tokenet.tsp.v1.TspControl/ListTokens", "expect OK", "save first tokens[0].digitalCardId",
                "echo ${first}", "call tsp tokenet.tsp.v1.TspControl/ListTokens {\"walletAccount\": 1}", "Sleep 1s",
                "stop tsp now", "start tsp", "echo ${never}",
            ], as: "many.scenario", in: try TemporaryDirectory())
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            lines.map { $0.dropFirst("tokenet: scenario: \(file):".count).prefix { $0 != ":" } } == [
                "1", "5", "6", "7", "9",
            ],
            "\(check.stderr)")
        #expect(lines.first?.hasSuffix("got 'bank'") == true, "\(check.stderr)")
        #expect(lines.last?.contains("${never} is not saved by an earlier line") == true, "\(check.stderr)")
    }

    /// Two bad saves of one call are both named; so is every step that nodes given with --tsp, --issuer and
    /// --wallet cannot run, across scripts, each by its line.
    @Test func checkNamesEveryBadSaveAndEveryStepAttachedNodesCannotRun() async throws {
        let directory = try TemporaryDirectory()
        let (saves, check, _) = try await Self.check(
            [
                "call wallet tokenet.wallet.v1.WalletControl/ListCards", "save a cardz[0].cardRef",
                "save b cards[0].cardReff",
            ], as: "saves.scenario", in: directory)
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.contains("\(saves):2: save a cardz[0].cardRef"), "\(check.stderr)")
        #expect(check.stderr.contains("\(saves):3: save b cards[0].cardReff"), "\(check.stderr)")

        let first = directory.path("first.scenario")
        try "call wallet tokenet.wallet.v1.WalletControl/ListCards\nfault tsp->issuer partition\n".write(
            toFile: first, atomically: true, encoding: .utf8)
        let second = directory.path("second.scenario")
        try "echo a\npause tsp\n".write(toFile: second, atomically: true, encoding: .utf8)
        let attached = try await LaunchedProcess.runNiced(
            "tokenet",
            [
                "scenario", first, second, "--check", "--tsp", "127.0.0.1:1", "--pki",
                DevelopmentPKI.shared.directory.path,
            ])
        #expect(attached.status == 2, "\(attached.stdout)\(attached.stderr)")
        let lines = attached.stderr.split(separator: "\n").filter { $0.hasPrefix("tokenet: ") }
        #expect(
            lines.map { $0.split(separator: ":").dropFirst(2).prefix(2).joined(separator: ":") } == [
                " \(first):1", " \(first):2", " \(second):2",
            ], "\(attached.stderr)")
    }

    /// A request that uses saved values is checked against its type too, each value that holds one taken for null:
    /// a misspelt field, or a value written out of the wrong type, is named before any node starts.
    @Test func aRequestWithSavedValuesIsCheckedAgainstItsType() async throws {
        let directory = try TemporaryDirectory()
        let (file, check, lines) = try await Self.check(
            [
                "call issuer tokenet.issuer.v1.IssuerControl/PushCard {\"cardId\": \"card-visa-session\", "
                    + "\"mode\": \"PUSH_MODE_SESSION\"}",
                "save session pushSessionId",
                "call wallet tokenet.wallet.v1.WalletControl/AddCard {\"pushSessionID\": \"${session}\"}",
                "call wallet tokenet.wallet.v1.WalletControl/AddCard {\"pushSessionId\": \"${session}\", \"language\": 5}",
                "call wallet tokenet.wallet.v1.WalletControl/AddCard {\"pushSessionId\": \"s-${session}\"}",
            ], as: "saved.scenario", in: directory)
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(lines.count == 2, "\(check.stderr)")
        #expect(
            lines.first?.hasSuffix(
                "\(file):3: call: request is not a valid tokenet.wallet.v1.AddCardRequest: unknown field "
                    + "\"pushSessionID\" in tokenet.wallet.v1.AddCardRequest; did you mean \"pushSessionId\"?") == true,
            "\(check.stderr)")
        #expect(lines.last?.contains("\(file):4: call: ") == true, "\(check.stderr)")
        #expect(lines.last?.contains("language: expected a string, found a number") == true, "\(check.stderr)")

        // An expected object that uses a saved value is checked the same way.
        let (expected, object, _) = try await Self.check(
            [
                "call wallet tokenet.wallet.v1.WalletControl/ListCards", "save card cards[0].cardRef",
                "call wallet tokenet.wallet.v1.WalletControl/ListCards",
                "expect OK {\"cards\": [{\"cardRef\": \"${card}\", \"status\": 5}]}",
            ], as: "expected.scenario", in: directory)
        #expect(object.status == 2, "\(object.stdout)\(object.stderr)")
        #expect(
            object.stderr.contains(
                "\(expected):4: the expected object is not a tokenet.wallet.v1.ListWalletCardsResponse: "),
            "\(object.stderr)")
    }

    /// A call as a role its method refuses is named before any node starts, with the identity line to write; one
    /// that expects PERMISSION_DENIED asks on purpose. It failed once the steps before it had run.
    @Test func aCallAsARoleItsMethodRefusesIsNamedByCheck() async throws {
        let (file, check, lines) = try await Self.check(
            [
                "identity wallet", "call tsp tokenet.tsp.v1.TspControl/ListTokens",
                "call tsp tokenet.tsp.v1.TspControl/ListTokens", "expect PERMISSION_DENIED",
                "watch l wallet tokenet.wallet.v1.WalletEvents/Listen", "identity operator",
                "call tsp tokenet.tsp.v1.TspControl/ListTokens",
            ], as: "roles.scenario", in: try TemporaryDirectory())
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            lines == [
                "tokenet: scenario: \(file):2: call: tokenet.tsp.v1.TspControl/ListTokens may be called as operator, not "
                    + "as wallet (the identity of the calls here); write identity operator above it, or expect "
                    + "PERMISSION_DENIED",
                "tokenet: scenario: \(file):5: watch: tokenet.wallet.v1.WalletEvents/Listen may be called as issuer, not "
                    + "as wallet (the identity of the calls here); write identity issuer above it",
            ], "\(check.stderr)")
    }

    /// A method its service lacks is a typo for the sandbox's nodes, which are of this build: named with the
    /// service's methods before any node starts. Nodes given with --wallet may be of another build, which may serve
    /// it: there the node judges.
    @Test func aMethodItsServiceLacksIsRefusedBeforeAnyNodeStarts() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("typo.scenario")
        try "call wallet tokenet.wallet.v1.WalletControl/ListCardz\nexpect OK\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stderr.contains(
                "scenario: \(file):1: call: tokenet.wallet.v1.WalletControl has no method ListCardz (its methods: "),
            "\(check.stderr)")
        #expect(check.stderr.contains("ListCards"), "\(check.stderr)")
        // --check finds the operator's files in --pki, as the run would.
        let attached = try await LaunchedProcess.runNiced(
            "tokenet",
            ["scenario", file, "--check", "--wallet", "127.0.0.1:1", "--pki", DevelopmentPKI.shared.directory.path])
        #expect(attached.status == 0, "\(attached.stderr)")
    }

    /// JSON that refers to saved values is checked too, before any node starts, with stand-ins for the values: a
    /// broken request, expect or await on line 40 is found before the 39 steps before it run.
    @Test func brokenJSONWithSavedValuesIsRefusedBeforeAnyNodeStarts() async throws {
        let directory = try TemporaryDirectory()
        let head = "call tsp tokenet.tsp.v1.TspControl/ListTokens\nsave t tokens[0].digitalCardId\n"
        let cases: [(String, String)] = [
            (
                #"call tsp tokenet.tsp.v1.TspControl/TokenHistory {"digitalCardId": "${t}""#,
                ":3: call: the request is not JSON: unexpected end of JSON inside an object at byte 24"
            ),
            (
                // The splitter's own message, named once as the line's.
                #"call tsp tokenet.tsp.v1.TspControl/TokenHistory {"digitalCardId": "${t}"} x"#,
                ":3: call: the request is not JSON: the request JSON has trailing characters at byte "
            ),
            (
                #"expect OK {"tokens": [{"digitalCardId": "${t}",}]}"#,
                ":3: expect OK takes one JSON object; trailing comma before '}' at byte 36"
            ),
            (
                "watch w tsp tokenet.health.v1.Health/Watch {}\nawait w {\"status\": ${t}",
                ":4: await takes one JSON object; unexpected end of JSON inside an object at byte 15"
            ),
        ]
        for (index, (line, message)) in cases.enumerated() {
            let file = directory.path("broken-\(index).scenario")
            try (head + line + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--check"])
            #expect(check.status == 2, "\(line): \(check.stdout)\(check.stderr)")
            #expect(check.stderr.contains("scenario: \(file)\(message)"), "\(line): \(check.stderr)")
        }
        let good = directory.path("good.scenario")
        try
            (head + #"call tsp tokenet.tsp.v1.TspControl/TokenHistory {"digitalCardId": "${t}"}"#
            + "\n" + #"expect OK {"token": {"digitalCardId": "${t}"}}"# + "\n").write(
                toFile: good, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", good, "--check"])
        #expect(check.status == 0, "\(check.stderr)")
    }

    /// Ctrl-C during a call that would wait two minutes ends it at once, and the nodes still stop cleanly. The
    /// JUnit report is still written: the interrupted scenario as a failure, the one it kept from running skipped.
    @Test func anInterruptEndsALongCallAndStopsTheNodes() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("long.scenario")
        let next = directory.path("next.scenario")
        let report = directory.path("report.xml")
        try "deadline 120s\ncall tsp tokenet.health.v1.Health/Watch {\"service\": \"\"}\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        try "echo fine\n".write(toFile: next, atomically: true, encoding: .utf8)
        let result = try await Self.interrupted(["scenario", file, next, "--junit", report], once: "deadline 120s")
        #expect(!result.stdout.contains("Scenario \(next)"), "\(result.stdout)")

        let document = try XMLDocument(contentsOf: URL(fileURLWithPath: report))
        let suite = try #require(try document.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement)
        #expect(suite.attribute(forName: "tests")?.stringValue == "2")
        #expect(suite.attribute(forName: "failures")?.stringValue == "1")
        #expect(suite.attribute(forName: "skipped")?.stringValue == "1")
        let cases = try document.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        #expect(cases.compactMap { $0.attribute(forName: "name")?.stringValue } == [file, next])
        let failure = try #require(cases.first?.elements(forName: "failure").first)
        // The step it stopped in is named: usually the one that hung.
        #expect(failure.attribute(forName: "message")?.stringValue == "FAILED at line 2: interrupted by SIGINT")
        #expect(result.stderr.contains("Scenario \(file) FAILED at line 2: interrupted by SIGINT"), "\(result.stderr)")
        let skipped = try #require(cases.last?.elements(forName: "skipped").first)
        #expect(skipped.attribute(forName: "message")?.stringValue == "not run: interrupted by SIGINT")
    }

    /// Ctrl-C while a join waits for a spawned call ends the wait and the call at once: the wait lasted until the
    /// call's deadline, since ending it did not cancel the call's own task.
    @Test func anInterruptEndsAJoinAndItsCall() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("spawned.scenario")
        try "deadline 120s\nspawn w tsp tokenet.health.v1.Health/Watch {\"service\": \"\"}\njoin w\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let result = try await Self.interrupted(["scenario", file], once: "spawn w: call tsp")
        #expect(result.stderr.contains("FAILED at line 3: interrupted by SIGINT"), "\(result.stderr)")
    }

    /// Runs `tokenet ARGUMENTS`, sends SIGINT half a second after its output shows `text`, and checks that it
    /// stopped at once (far below the calls' deadline: a run that ignored the signal is killed at the limit and
    /// fails here), said so, and stopped its three nodes cleanly.
    static func interrupted(_ arguments: [String], once text: String) async throws -> ProcessResult {
        let launched = try LaunchedProcess(niced: "tokenet", arguments)
        let started = ContinuousClock.now
        while !((try? String(contentsOfFile: launched.directory.path("stdout"), encoding: .utf8)) ?? "").contains(
            text), ContinuousClock.now - started < .seconds(60), launched.process.isRunning
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(500))
        launched.process.send(SIGINT)
        let result = try await launched.waitForExit(limit: 60)
        #expect(result.reason == .exit && result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stderr.contains("interrupted by SIGINT"))
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 3)
        return result
    }

    @Test func anAwaitThatSeesNoMatchNamesWhatItSaw() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("await.scenario")
        func run(_ script: String) async throws -> ProcessResult {
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            return try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
        }
        let watch = #"watch health tsp tokenet.health.v1.Health/Watch {"service": ""}"#

        let result = try await run(watch + "\n" + #"await health within 1s {"status": "SERVING_STATUS_NOT_SERVING"}"#)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains(
                "FAILED at line 2: no message of watch health matched within 1s (1 new, 1 in all; message 1: status: "
                    + #"expected "SERVING_STATUS_NOT_SERVING", got "SERVING_STATUS_SERVING")"#), "\(result.stderr)")
        // The watch was closed before the nodes stopped, and they stopped cleanly.
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 3)

        // An object the watch's messages cannot hold (a misspelt field) is the script's error, not a match: found
        // before any node starts.
        let misspelt = try await run(watch + "\n" + #"await health within 1s {"stauts": "SERVING_STATUS_SERVING"}"#)
        #expect(misspelt.status == 2, "stdout:\n\(misspelt.stdout)\nstderr:\n\(misspelt.stderr)")
        #expect(
            misspelt.stderr.contains(
                "await.scenario:2: the expected object is not a tokenet.health.v1.HealthCheckResponse: unknown field "
                    + #""stauts""#), "\(misspelt.stderr)")

        let unary = try await run("watch once tsp tokenet.health.v1.Health/Check {\"service\": \"\"}\n")
        #expect(unary.status == 2, "stdout:\n\(unary.stdout)\nstderr:\n\(unary.stderr)")
        // Refused before the nodes start, as `--check` refuses it.
        #expect(
            unary.stderr.contains(":1: watch: /tokenet.health.v1.Health/Check answers once; call it instead"),
            "\(unary.stderr)")
    }

    /// A paused node accepts connections in the kernel and says nothing: a call runs out of its deadline. Resumed,
    /// it answers; one still paused at the end is resumed before it is stopped, and exits cleanly.
    /// A restarted node ends its watches: the script opens the watch again under the name its awaits use (refused
    /// before as "already watched"). An await on a watch that ended counts only the messages after the earlier
    /// awaits' (it said "after 2 messages, none of them matching" of a message an earlier await had matched).
    @Test func aWatchIsOpenedAgainUnderItsNameAfterARestart() async throws {
        let result = try await Self.run(
            """
            watch health tsp tokenet.health.v1.Health/Watch {"service": ""}
            await health {"status": "SERVING_STATUS_SERVING"}
            stop tsp
            start tsp
            watch health tsp tokenet.health.v1.Health/Watch {"service": ""}
            await health {"status": "SERVING_STATUS_SERVING"}
            stop tsp
            await health within 5s {"status": "SERVING_STATUS_SERVING"}
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("5  watch health: the earlier watch of that name is closed"))
        #expect(result.stdout.contains("6  await health -> message 1"))
        #expect(
            result.stderr.contains(
                "FAILED at line 8: watch health ended after 2 messages (UNAVAILABLE: the node is shutting down"),
            "\(result.stderr)")
        #expect(result.stderr.contains("earlier awaits took message 1, and none of the 1 after matched (message 2: "))
    }

    /// A watch the node refuses at once fails its own line: it was reported open, and only the next await said why.
    @Test func aWatchTheNodeRefusesFailsItsLine() async throws {
        let result = try await Self.run(
            """
            identity wallet
            watch events tsp tokenet.tsp.v1.Notifications/Subscribe {"instanceId": "not an id"}
            echo not reached
            """)
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains(
                "FAILED at line 2: watch events did not open: INVALID_ARGUMENT: instance_id must be 1 to 64 letters"),
            "\(result.stderr)")
        #expect(!result.stdout.contains("open (trace"), "\(result.stdout)")
        #expect(!result.stdout.contains("not reached"), "\(result.stdout)")
    }

    @Test func aPausedNodeIsSilentUntilResumed() async throws {
        let result = try await Self.run(
            """
            pause wallet
            deadline 1s
            call wallet tokenet.wallet.v1.WalletControl/ListCards
            expect DEADLINE_EXCEEDED "while connecting"
            resume wallet
            deadline 30s
            call wallet tokenet.wallet.v1.WalletControl/ListCards
            pause issuer
            """)
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("pause wallet: wallet-node pid="))
        #expect(result.stdout.contains("paused (SIGSTOP)"))
        #expect(result.stdout.contains("resumed (SIGCONT)"))
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 3)
    }

    /// A regular expression that backtracks without end (eight `.*` before a `!` the text lacks: about n^8 steps)
    /// fails its step after the limit instead of holding the run.
    @Test func aRunawayRegularExpressionFailsItsStep() async throws {
        let result = try await Self.run(
            """
            call issuer tokenet.issuer.v1.IssuerControl/PushCard {"cardId": "card-visa-approve", "mode": "PUSH_MODE_SESSION"}
            save session pushSessionId
            call wallet tokenet.wallet.v1.WalletControl/AddCard {"pushSessionId": "${session}"}
            save t terms.text match .*.*.*.*.*.*.*.*!
            """)
        #expect(result.reason == .exit && result.status == 2, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stderr.contains("FAILED at line 4: save t: /.*.*.*.*.*.*.*.*!/ did not finish matching terms.text"))
        #expect(result.stdout.components(separatedBy: "exited with status 0").count - 1 == 3)
    }

    /// tokenet killed with SIGKILL cannot stop its nodes; they stop themselves (--parent-pid) instead of running on.
    @Test func nodesDoNotOutliveAKilledRun() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("long.scenario")
        try "sleep 120s\n".write(toFile: file, atomically: true, encoding: .utf8)
        let launched = try LaunchedProcess(niced: "tokenet", ["scenario", file, "--keep-dir"])
        let started = ContinuousClock.now
        func output() -> String {
            (try? String(contentsOfFile: launched.directory.path("stdout"), encoding: .utf8)) ?? ""
        }
        while !output().contains("sleep 2m") && !output().contains("sleep 120s"), launched.process.isRunning,
            ContinuousClock.now - started < .seconds(60)
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        let pids = output().split(separator: "\n").compactMap { line -> Int32? in
            guard line.contains("  ready "), let pid = line.split(separator: " ").first(where: { $0.hasPrefix("pid=") })
            else { return nil }
            return Int32(pid.dropFirst(4))
        }
        #expect(pids.count == 3, "\(output())")
        launched.process.send(SIGKILL)
        _ = try await launched.waitForExit(limit: 30)
        let killed = ContinuousClock.now
        while pids.contains(where: { kill($0, 0) == 0 }), ContinuousClock.now - killed < .seconds(30) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!pids.contains(where: { kill($0, 0) == 0 }), "nodes \(pids) still run")
        let workspace = output().split(separator: "\n").first { $0.contains("certificates  generated") }
            .flatMap { $0.split(separator: " ").last }.map {
                URL(fileURLWithPath: String($0)).deletingLastPathComponent()
            }
        if let workspace {
            let log =
                (try? String(
                    contentsOf: workspace.appendingPathComponent("tsp-node/tsp-node.stderr.log"), encoding: .utf8))
                ?? ""
            #expect(log.contains("(--parent-pid) ended"), "\(log.suffix(500))")
            try? FileManager.default.removeItem(at: workspace)
        }
    }

    /// `--junit` writes one test case per scenario, a differing step as a failure and a wrong script as an error.
    @Test func theResultsGoToAJUnitReport() async throws {
        let directory = try TemporaryDirectory()
        let passing = directory.path("passing.scenario")
        let failing = directory.path("failing <&> \"quoted\".scenario")
        let report = directory.path("report.xml")
        try "echo fine\n".write(toFile: passing, atomically: true, encoding: .utf8)
        try
            "call tsp tokenet.tsp.v1.TspControl/ListTokens\nexpect OK {\"tokens\": [{\"state\": \"TOKEN_STATE_ACTIVE\"}]}\n"
            .write(toFile: failing, atomically: true, encoding: .utf8)
        let result = try await LaunchedProcess.runNiced(
            "tokenet", ["scenario", passing, failing, "--junit", report, "--timeout", "60"])
        #expect(result.status == 1, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")

        let document = try XMLDocument(contentsOf: URL(fileURLWithPath: report))
        let suite = try #require(try document.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement)
        #expect(suite.attribute(forName: "tests")?.stringValue == "2")
        #expect(suite.attribute(forName: "failures")?.stringValue == "1")
        #expect(suite.attribute(forName: "errors")?.stringValue == "0")
        #expect(suite.attribute(forName: "skipped")?.stringValue == "0")
        let cases = try document.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        #expect(cases.compactMap { $0.attribute(forName: "name")?.stringValue } == [passing, failing])
        #expect(cases.first?.children == nil || cases.first?.children?.isEmpty == true)
        let failure = try #require(cases.last?.elements(forName: "failure").first)
        #expect(
            failure.attribute(forName: "message")?.stringValue
                == #"FAILED at line 2: tokens: expected [{"state":"TOKEN_STATE_ACTIVE"}], got [] (left out, as proto3 JSON leaves a default)"#
        )
        #expect(failure.stringValue?.contains("What the nodes logged for trace") == true)
    }

    /// A report that cannot be written is refused before any node starts (exit 2), naming what is wrong with the
    /// path; found after the run, it turned a run that had passed into a failure. `--check` checks it too.
    @Test func aJUnitReportThatCannotBeWrittenIsRefusedBeforeTheRun() async throws {
        let directory = try TemporaryDirectory()
        let script = directory.path("passing.scenario")
        try "echo fine\n".write(toFile: script, atomically: true, encoding: .utf8)
        let report = directory.path("missing/report.xml")
        let result = try await LaunchedProcess.runNiced(
            "tokenet", ["scenario", script, "--junit", report, "--timeout", "60"])
        #expect(result.status == 2, "\(result.stderr)")
        let expected = "tokenet: scenario: --junit \(report): the folder \(directory.path("missing")) does not exist\n"
        #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
        #expect(!result.stdout.contains("fine"), "\(result.stdout)")
        let folder = try await LaunchedProcess.runNiced(
            "tokenet", ["scenario", script, "--check", "--junit", directory.path("")])
        #expect(folder.status == 2, "\(folder.stderr)")
        #expect(folder.stderr.contains("is a folder; name the report's file"), "\(folder.stderr)")
    }

    /// A script file is read as standard input is: a pipe (a shell's `<(…)`, a FIFO) works as a regular file does,
    /// and at most 16 MiB is read, so `/dev/zero` or a huge file is refused once that much has come instead of being
    /// read whole into memory. (A FIFO failed with "Inappropriate ioctl for device".) A byte order mark is skipped.
    @Test func aScriptIsReadThroughAPipeAndAtMost16MiBOfIt() async throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path("fifo.scenario")
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = try LaunchedProcess(
            executable: URL(fileURLWithPath: "/bin/sh"), ["-c", "printf '\\357\\273\\277echo hi\\n' > \(fifo)"])
        let piped = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", fifo], limit: 60)
        _ = try await writer.waitForExit(limit: 30)
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout == "\(fifo): 1 step, 0 calls: OK\n", "\(piped.stdout)")

        let large = directory.path("large.scenario")
        try Data(repeating: UInt8(ascii: "\n"), count: 17 << 20).write(to: URL(fileURLWithPath: large))
        for file in ["/dev/zero", large] {
            let refused = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", file], limit: 60)
            #expect(refused.status == 2, "\(file): \(refused.stderr)")
            #expect(
                refused.stderr.contains("scenario: \(file) holds more than 16 MiB of script"),
                "\(file): \(refused.stderr)")
        }
    }

    /// A header the CLI would refuse (a key of the runtime's own) is found by `--check`, before any node starts, as
    /// every other line is; it failed only once the run reached it.
    @Test func aWrongHeaderIsRefusedBeforeAnyNodeStarts() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("header.scenario")
        try "echo first\nheader tokenet-peer: x\n".write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", file])
        #expect(check.status == 2, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stderr.contains(
                "scenario: \(file):2: header: 'tokenet-peer' uses the prefix tokenet-, which is reserved"),
            "\(check.stderr)")
    }

    /// A card number in a script is masked wherever the run prints it: in a wrong line's error, in echo text and in
    /// a header as it is printed (the nodes mask the ones they answer with; these the runner printed as written).
    @Test func aCardNumberInTheScriptIsPrintedMasked() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("pan.scenario")
        try "identity 4761000010000009\n".write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", file])
        #expect(check.status == 2)
        #expect(check.stderr.contains("got '************0009'"), "\(check.stderr)")
        #expect(!check.stderr.contains("4761000010000009"), "\(check.stderr)")

        try "echo card 4761 0000 1000 0009\nheader x-card: 4761000010000009\nsleep 1s 4761000010000009\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let bad = try await LaunchedProcess.runNiced("tokenet", ["scenario", "--check", file])
        #expect(bad.status == 2)
        #expect(!bad.stderr.contains("4761000010000009"), "\(bad.stderr)")
        try "echo card 4761 0000 1000 0009\nheader x-card: 4761000010000009\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let run = try await LaunchedProcess.runNiced("tokenet", ["scenario", file, "--timeout", "60"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("    1  card **** **** **** 0009"), "\(run.stdout)")
        #expect(run.stdout.contains("    2  header x-card: ************0009"), "\(run.stdout)")
        // The card number's forms, not its first digits alone, which a port or a pid the run prints may hold.
        for form in ["4761000010000009", "4761 0000 1000 0009", "4761 0000"] {
            #expect(!run.stdout.contains(form), "\(run.stdout)")
        }
    }
}
