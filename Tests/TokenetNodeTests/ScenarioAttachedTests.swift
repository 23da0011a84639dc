import Foundation
import Testing
import TokenetNode
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `tokenet scenario --tsp ADDR --pki DIR`: scripts against a node someone else started, which they can only call.
@Suite struct ScenarioAttachedTests {
    @Test func scriptsCallANodeStartedByHand() async throws {
        try await offThePool { try Self.againstATSPNode() }
    }

    /// A party's certificate or key that `identity` needs and --pki lacks is named before anything runs, as the
    /// operator's files are: a missing key was found only by the first call, as its UNAVAILABLE outcome (which an
    /// `expect UNAVAILABLE` line took for the node's answer), and in the words of an option never given ("--key").
    @Test func anIdentityWhoseFilesAreMissingIsRefusedBeforeTheRun() async throws {
        let pki = try TemporaryDirectory()
        for file in ["ca.pem", "operator.pem", "operator.key", "wallet.pem"] {
            try FileManager.default.copyItem(
                atPath: DevelopmentPKI.shared.directory.appendingPathComponent(file).path, toPath: pki.path(file))
        }
        let file = pki.path("identity.scenario")
        /// Runs `script` against a TSP address where nothing listens, with the PKI above.
        func run(_ script: String, _ extra: [String] = []) async throws -> ProcessResult {
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            return try await LaunchedProcess.run(
                "tokenet", ["scenario", file, "--tsp", "127.0.0.1:1", "--pki", pki.url.path] + extra)
        }
        // --check refuses it too: it had passed the script the run then refused.
        for extra in [[], ["--check"]] {
            let result = try await run(
                "echo first\nidentity wallet\ncall tsp tokenet.health.v1.Health/Check\nexpect UNAVAILABLE\n", extra)
            #expect(result.status == 2, "\(extra) \(result.stdout)\(result.stderr)")
            #expect(
                result.stderr.contains(
                    "scenario: \(file):2: identity wallet: --pki \(pki.url.path) has no wallet.key"),
                "\(extra) \(result.stderr)")
            #expect(!result.stdout.contains("first"), "\(result.stdout)")
            #expect(!result.stdout.contains(": OK"), "\(result.stdout)")
        }

        // An identity of the script's own is made only in a sandbox: against nodes started by hand, its files are
        // the PKI's, and the message says how to make them.
        let own = try await run("identity wallet/my-wallet\ncall tsp tokenet.health.v1.Health/Check\n")
        #expect(own.status == 2, "\(own.stdout)\(own.stderr)")
        #expect(
            own.stderr.contains(
                "scenario: \(file):1: identity wallet/my-wallet: --pki \(pki.url.path) has no my-wallet.pem (make it "
                    + "with: tokenet pki init \(pki.url.path) --node wallet/my-wallet)"),
            "\(own.stderr)")

        // Files of another identity under its name: refused before the run, naming the identity they hold (the calls
        // went as the issuer, or as the sandbox's wallet-1).
        for (source, holder) in [("issuer", "tokenet://issuer/issuer-1"), ("wallet", "tokenet://wallet/wallet-1")] {
            for suffix in ["pem", "key"] {
                try? FileManager.default.removeItem(atPath: pki.path("my-wallet.\(suffix)"))
                try FileManager.default.copyItem(
                    atPath: DevelopmentPKI.shared.directory.appendingPathComponent("\(source).\(suffix)").path,
                    toPath: pki.path("my-wallet.\(suffix)"))
            }
            let other = try await run("identity wallet/my-wallet\ncall tsp tokenet.health.v1.Health/Check\n")
            #expect(other.status == 2, "\(other.stdout)\(other.stderr)")
            #expect(
                other.stderr.contains(
                    "scenario: \(file):1: identity wallet/my-wallet: \(pki.url.path)/my-wallet.pem is \(holder), not "
                        + "tokenet://wallet/my-wallet"),
                "\(other.stderr)")
        }

        // The role's own ID is the role's certificate, wallet.pem (tokenet://wallet/wallet-1): the PKI has no
        // wallet-1.pem, and Tools/gen-certs refuses to make one beside wallet.pem.
        try FileManager.default.copyItem(
            atPath: DevelopmentPKI.shared.directory.appendingPathComponent("wallet.key").path,
            toPath: pki.path("wallet.key"))
        let roles = try await run("identity wallet/wallet-1\ncall tsp tokenet.health.v1.Health/Check\n", ["--check"])
        #expect(roles.status == 0, "\(roles.stdout)\(roles.stderr)")
        #expect(roles.stdout.hasSuffix(": 2 steps, 1 call: OK\n"), "\(roles.stdout)")
    }

    static func againstATSPNode() throws {
        let pki = DevelopmentPKI.shared
        let data = try TemporaryDirectory()
        let readyFile = data.path("ready.json")
        let node = try LaunchedProcess.tspNode(in: data)
        defer { PythonClientInteropTests.stop(node.process) }
        let address = try PythonClientInteropTests.waitFor(node.process, "tsp-node's ready file") {
            FileManager.default.fileExists(atPath: readyFile) ? try ReadyFile.read(from: readyFile).listen : nil
        }
        func run(_ script: String, _ extra: [String] = ["--tsp", address, "--pki", pki.directory.path]) throws
            -> ProcessResult
        {
            let file = data.path("script-\(TestScratch.uniqueName()).scenario")
            try script.write(toFile: file, atomically: true, encoding: .utf8)
            return try LaunchedProcess.run("tokenet", ["scenario", file] + extra)
        }

        let passing = try run(
            """
            call tsp tokenet.health.v1.Health/Check {"service": ""}
            expect OK {"status": "SERVING_STATUS_SERVING"}
            call tsp tokenet.tsp.v1.TspControl/TokenHistory {"digitalCardId": "nope"}
            expect NOT_FOUND "nope"
            """)
        #expect(passing.status == 0, "stdout:\n\(passing.stdout)\nstderr:\n\(passing.stderr)")
        #expect(passing.stdout.contains("(against the nodes given)"))
        #expect(passing.stdout.contains("OK: 2 steps, 2 calls, in "))
        #expect(!passing.stdout.contains("ready"), "no sandbox of its own: \(passing.stdout)")

        let failing = try run("call tsp tokenet.tsp.v1.TspControl/TokenHistory {\"digitalCardId\": \"nope\"}\n")
        #expect(failing.status == 1)
        #expect(failing.stderr.contains("FAILED at line 1: expected OK, got NOT_FOUND: no token has digital card id"))
        #expect(failing.stderr.contains("Look for trace_id="))

        let killing = try run("call tsp tokenet.health.v1.Health/Check\nkill tsp\n")
        #expect(killing.status == 2)
        #expect(
            killing.stderr.contains(":2: faults, stop, kill, start and pause need the nodes the scenario starts itself")
        )
        let wallet = try run("call wallet tokenet.wallet.v1.WalletControl/ListCards\n")
        #expect(wallet.status == 2)
        #expect(wallet.stderr.contains(":1: calls wallet, but no --wallet is given"), "\(wallet.stderr)")
        // A spawned call too: it stopped the command with a crash.
        let spawned = try run("spawn w wallet tokenet.wallet.v1.WalletControl/ListCards\njoin w\n")
        #expect(spawned.status == 2, "\(spawned.stdout)\(spawned.stderr)")
        #expect(spawned.stderr.contains(":1: calls wallet, but no --wallet is given"), "\(spawned.stderr)")
        // The TSP's address given for the wallet: the node reached is named, for a call and for a watch.
        let wrongNode = ["--wallet", address, "--pki", pki.directory.path]
        // encrypt asks the TSP for its key: without --tsp it is refused before the run (it stopped the command).
        let encrypting = try run("echo first\nencrypt card 4761000010000009 12/29\n", wrongNode)
        #expect(encrypting.status == 2, "\(encrypting.stdout)\(encrypting.stderr)")
        #expect(encrypting.stderr.contains(":2: calls tsp, but no --tsp is given"), "\(encrypting.stderr)")
        #expect(!encrypting.stdout.contains("first"), "\(encrypting.stdout)")
        let wrongCall = try run("call wallet tokenet.wallet.v1.WalletControl/ListCards\n", wrongNode)
        #expect(wrongCall.status == 1)
        #expect(
            wrongCall.stderr.contains(
                "FAILED at line 1: expected OK, got UNIMPLEMENTED: \(address) does not serve "
                    + "tokenet.wallet.v1.WalletControl, which a wallet-node serves; it is a tsp-node: give the address "
                    + "of a wallet-node"), "\(wrongCall.stderr)")
        let wrongWatch = try run("watch events wallet tokenet.wallet.v1.WalletEvents/Listen\n", wrongNode)
        #expect(wrongWatch.status == 1)
        #expect(
            wrongWatch.stderr.contains("it is a tsp-node: give the address of a wallet-node"), "\(wrongWatch.stderr)")
        let noPKI = try run("call tsp tokenet.health.v1.Health/Check\n", ["--tsp", address])
        #expect(noPKI.status == 2)
        #expect(noPKI.stderr.contains("--tsp, --issuer and --wallet need --pki DIR"))
        let badAddress = try run("call tsp tokenet.health.v1.Health/Check\n", ["--tsp", "127.0.0.1"])
        #expect(badAddress.status == 2)
        #expect(badAddress.stderr.contains("--tsp needs HOST:PORT"))
        // A --pki whose CA did not sign the node is named as the scenario takes it (--pki), not as --cacert.
        let otherCA = try run(
            "call tsp tokenet.health.v1.Health/Check\n", ["--tsp", address, "--pki", pki.untrustedDirectory.path])
        #expect(otherCA.status == 1)
        #expect(
            otherCA.stderr.contains(
                "its certificate is not signed by the CA of the PKI in \(pki.untrustedDirectory.path) "
                    + "(\(pki.untrustedPath("ca.pem"))); give the folder of the node's PKI"), "\(otherCA.stderr)")
        // The sandbox's options do nothing for nodes given: refused rather than taken silently.
        for flag in [["--keep-dir"], ["--timeout", "60"]] {
            let sandboxOnly = try run(
                "call tsp tokenet.health.v1.Health/Check\n", ["--tsp", address, "--pki", pki.directory.path] + flag)
            #expect(sandboxOnly.status == 2, "\(flag): \(sandboxOnly.stderr)")
            #expect(
                sandboxOnly.stderr.hasPrefix(
                    "tokenet: scenario: \(flag[0]) is for the nodes a scenario starts itself; with --tsp, --issuer or "
                        + "--wallet there are none"), "\(sandboxOnly.stderr)")
        }
    }
}

/// What a script's failed expectation prints of a status message that a server other than Tokenet's nodes sent, which
/// may be as long as a frame and may echo a card number it was sent.
@Suite struct ScenarioExpectationMessageTests {
    /// Runs `script` against an in-process server (the TSP of the development PKI) whose Health/Check fails with
    /// NOT_FOUND and `message`.
    private static func run(_ script: String, message: String) async throws -> ProcessResult {
        let data = try TemporaryDirectory()
        let file = data.path("expectation.scenario")
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws -> HealthV1.HealthCheckResponse in
            throw RPCError(.notFound, message)
        }
        return try await runTokenet(servedOverTLSBy: router) { address in
            ["scenario", file, "--tsp", address, "--pki", DevelopmentPKI.shared.directory.path]
        }
    }

    /// The message a call ended with is quoted in the failure masked, cut and with its control characters escaped, as
    /// the call's own summary line prints it: quoted whole, a card number echoed by the server was printed in clear and
    /// a message of megabytes flooded the terminal.
    @Test func aFailedExpectationQuotesTheMessageMaskedAndCut() async throws {
        let message = "no card 4761 0000 1000 0009\n" + String(repeating: "x", count: 4_000)
        let result = try await Self.run(
            "call tsp tokenet.health.v1.Health/Check {}\nexpect NOT_FOUND \"nothing like this\"\n", message: message)
        #expect(result.status == 1, "\(result.stderr)")
        let failure = result.stderr.split(separator: "\n").first { $0.contains("FAILED at line 2") } ?? ""
        #expect(failure.contains("got \"no card **** **** **** 0009\\u{A}xxx"), "\(failure)")
        #expect(
            !Self.withoutTraceIDs(result.stdout).contains("4761")
                && !Self.withoutTraceIDs(result.stderr).contains("4761"), "\(result.stderr)")
        #expect(failure.count < 1_300, "\(failure.count) characters")
    }

    /// An unmet `expect CODE` quotes the message the same way.
    @Test func aWrongCodeQuotesTheMessageMasked() async throws {
        let result = try await Self.run(
            "call tsp tokenet.health.v1.Health/Check {}\nexpect OK\n", message: "no card 4761000010000009")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("expected OK, got NOT_FOUND: no card ************0009"), "\(result.stderr)")
        #expect(!Self.withoutTraceIDs(result.stderr).contains("4761"), "\(result.stderr)")
    }

    /// The output without the trace id a failure names (15 random hex digits, which hold a given 4 digits about once
    /// in 8,000), for the checks that no digits of the card number are left.
    static func withoutTraceIDs(_ text: String) -> String {
        text.replacing(/trace_id=[0-9a-f]+/, with: "trace_id=…")
    }
}
