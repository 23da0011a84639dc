import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// A card issuer written in Python from the `.proto` files and the documentation alone
/// (`Tools/interop/python-issuer`, a server over `tokenet_server.py`), with the issuer role's certificate, plugged
/// into a real `tsp-node`: it registers its BIN ranges and key, decrypts the card data the TSP sends it and decides
/// by its own rules. The Python wallet provider (`Tools/interop/python-wallet`) provisions its cards through the TSP:
/// the approved one ends ACTIVE, the declined one with no token, and the stepped-up one ACTIVE after the one-time
/// code the Python issuer delivered.
@Suite struct PythonIssuerInteropTests {
    /// The Python issuer's card numbers (and one in its range it does not have), which nothing may print.
    static let pans = ["4999010010000010", "5599010030000033", "4999010020000026", "4999010050000052"]

    /// What the runs printed and how the processes ended, gathered off the cooperative pool (`offThePool`).
    struct Outcome: Sendable {
        var wallet: ProcessResult
        var unknownCard: ProcessResult
        var issuer: ProcessResult
        var tspLog: String
        var tspExitedCleanly: Bool
    }

    static func run() throws -> Outcome {
        let pki = DevelopmentPKI.shared
        let parties = try Parties.start(pki)
        defer { parties.stop() }
        let common = ["--tsp", parties.tsp, "--pki", pki.directory.path, "--issuer", parties.issuer]
        let wallet = try PythonClientInteropTests.runCheck(
            common + ["--fixtures", parties.cardsFile], script: "Tools/interop/python-wallet")
        // A card in the issuer's range that it does not have: the issuer finds it not eligible, and says why.
        let cards = try String(contentsOfFile: parties.cardsFile, encoding: .utf8)
            .replacingOccurrences(of: "4999010010000010", with: "4999010050000052")
        let unknownCards = parties.data.path("unknown-cards.json")
        try cards.write(toFile: unknownCards, atomically: true, encoding: .utf8)
        let unknownCard = try PythonClientInteropTests.runCheck(
            common + ["--fixtures", unknownCards, "--scenario", "approved"], script: "Tools/interop/python-wallet")
        parties.issuerProcess.process.send(SIGTERM)
        let issuer = try parties.issuerProcess.waitForExit(limit: 30)
        parties.tspNode.process.send(SIGTERM)
        parties.tspNode.process.waitUntilExit(killingAfter: 30)
        return Outcome(
            wallet: wallet, unknownCard: unknownCard, issuer: issuer, tspLog: parties.tspLog,
            tspExitedCleanly: parties.tspNode.process.termination?.isCleanExit == true)
    }

    @Test func aPythonIssuerDecidesTheCardsAWalletProvisionsThroughTheTSP() async throws {
        let outcome = try await offThePool { try Self.run() }
        let wallet = outcome.wallet
        let output = wallet.stdout
        #expect(wallet.status == 0, "stdout:\n\(output)\nstderr:\n\(wallet.stderr)")
        let results = output.split(separator: "\n").filter { $0.hasPrefix("RESULT ") }
        #expect(results.count == 3, "\(output)")
        #expect(results.contains { $0.hasPrefix("RESULT approved ok: token DNIT") && $0.hasSuffix(" is ACTIVE") })
        #expect(
            results.contains {
                $0 == "RESULT declined ok: DECLINED, no token for the wallet: the card is reported lost"
            })
        #expect(results.contains { $0.hasPrefix("RESULT step-up ok: token DNIT") && $0.hasSuffix(" is ACTIVE") })
        // The Python issuer decided each card, not the TSP's stand-in.
        for step in [
            "[approved] CheckEligibility: eligible, VISA card ending 0010; T&C ",
            "[approved] Digitize: APPROVED (decided by issuer): digital card DNIT",
            "[declined] CheckEligibility: eligible, MASTERCARD card ending 0033",
            "[declined] Digitize: DECLINED (decided by issuer): the card is reported lost",
            "[step-up] Digitize: REQUIRE_ADDITIONAL_AUTHENTICATION (decided by issuer)",
            "ID&V methods: otp-sms (OTP_SMS, ***-***-0002), otp-email (OTP_EMAIL, a***@example.net)",
            "[step-up] the issuer's outbox (as the operator): an SMS to ***-***-0002 with a six-digit code",
            "[step-up] SubmitOtp with a wrong code: INCORRECT_CODE, 2 tries left, token INACTIVE",
            "[step-up] SubmitOtp with the code from the SMS: SUCCESS",
        ] {
            #expect(output.contains(step), "no \(step) in:\n\(output)")
        }

        let unknown = outcome.unknownCard
        #expect(unknown.status == 1, "stdout:\n\(unknown.stdout)\nstderr:\n\(unknown.stderr)")
        #expect(
            unknown.stdout.contains(
                "RESULT approved FAIL: CheckEligibility: not eligible: ISSUER_DECLINED: the card ending 0052 is not a "
                    + "card of this issuer"),
            "\(unknown.stdout)")

        // The issuer's side of the same calls: the card data it decrypted, its decisions, the code it delivered.
        let issuer = outcome.issuer
        let issuerLines = issuer.stdout.split(separator: "\n")
        #expect(issuer.status == 0 && issuer.reason == .exit, "stdout:\n\(issuer.stdout)\nstderr:\n\(issuer.stderr)")
        #expect(issuer.stderr.isEmpty, "\(issuer.stderr)")
        #expect(issuerLines.contains { $0.hasPrefix("python-issuer: registered with the TSP tokenet://tsp/") })
        for (fragment, count) in [
            ("CheckCardEligibility: card ending 0010 (card data to kid ", 1),
            ("CheckCardEligibility: card ending 0052 (card data to kid ", 1),
            ("AuthorizeDigitization: card ending 0010 (0010), digital card DNIT", 1),
            ("AuthorizeDigitization: card ending 0033 (0033), digital card DWSPMC", 1),
            ("AuthorizeDigitization: card ending 0026 (0026), digital card DNIT", 1),
            ("SendOtp: a one-time code for digital card DNIT", 1),
            ("Outbox (as tokenet://operator/", 1),
        ] {
            #expect(issuerLines.filter { $0.contains(fragment) }.count == count, "\(fragment) in:\n\(issuer.stdout)")
        }
        #expect(issuerLines.contains { $0.hasSuffix(": APPROVED") && $0.contains("ending 0010") })
        #expect(issuerLines.contains { $0.hasSuffix(": DECLINED (the card is reported lost)") })
        #expect(issuerLines.contains { $0.hasSuffix(": REQUIRE_ADDITIONAL_AUTHENTICATION with otp-sms, otp-email") })
        #expect(issuerLines.contains { $0.contains("(method otp-sms) delivered by sms to ***-***-0002") })
        #expect(
            issuerLines.last == "python-issuer: stopped: 1 approved, 1 declined, 1 stepped up, 1 code(s) delivered",
            "\(issuer.stdout)")
        // The TSP reached the issuer every time: no stand-in decision, no failed delivery.
        #expect(
            !outcome.tspLog.contains("stand-in") && !outcome.tspLog.contains("could not deliver"), "\(outcome.tspLog)")
        #expect(outcome.tspExitedCleanly)
        PythonWalletInteropTests.expectNoPAN(
            of: Self.pans,
            in: [output, wallet.stderr, unknown.stdout, issuer.stdout, issuer.stderr, outcome.tspLog])
    }

    /// The Python issuer and a tsp-node over mutual TLS, each knowing the other, once the issuer has registered.
    struct Parties {
        let issuerProcess: LaunchedProcess
        let tspNode: LaunchedProcess
        let data: TemporaryDirectory
        let tsp: String
        let issuer: String
        var cardsFile: String { data.path("cards.json") }

        var tspLog: String { (try? String(contentsOfFile: tspNode.directory.path("stderr"), encoding: .utf8)) ?? "" }

        func stop() {
            PythonClientInteropTests.stop(issuerProcess.process)
            PythonClientInteropTests.stop(tspNode.process)
        }

        /// The issuer listens on a port of its own choosing; the TSP, which must know the issuer's address when it
        /// starts, on a port picked just before (another process may take it in between: then again, twice).
        static func start(_ pki: DevelopmentPKI) throws -> Parties {
            try PythonWalletInteropTests.Nodes.PortTaken.retrying { try startOnce(pki) }
        }

        static func startOnce(_ pki: DevelopmentPKI) throws -> Parties {
            let data = try TemporaryDirectory()
            let tsp = "127.0.0.1:\(try freeLoopbackPort())"
            let issuerProcess = try LaunchedProcess(
                python: "Tools/interop/python-issuer",
                ["--tsp", tsp, "--pki", pki.directory.path, "--cards-file", data.path("cards.json")])
            let stdout = {
                (try? String(contentsOfFile: issuerProcess.directory.path("stdout"), encoding: .utf8)) ?? ""
            }
            let ready = "READY python-issuer listen="
            let issuer: String
            do {
                issuer = try PythonClientInteropTests.waitFor(issuerProcess.process, "python-issuer's READY line") {
                    stdout().split(separator: "\n").first { $0.hasPrefix(ready) }.map {
                        String($0.dropFirst(ready.count))
                    }
                }
            } catch {
                PythonClientInteropTests.stop(issuerProcess.process)
                throw error
            }
            let tspReady = data.path("tsp-ready.json")
            let tspNode = try LaunchedProcess(
                "tsp-node",
                [
                    "--listen", tsp, "--data-dir", data.path("tsp"), "--ready-file", tspReady, "--issuer", issuer,
                    "--cert", pki.path("tsp.pem"), "--key", pki.path("tsp.key"), "--ca", pki.path("ca.pem"),
                ])
            let parties = Parties(issuerProcess: issuerProcess, tspNode: tspNode, data: data, tsp: tsp, issuer: issuer)
            do {
                _ = try PythonClientInteropTests.waitFor(tspNode.process, "tsp-node's ready file") {
                    FileManager.default.fileExists(atPath: tspReady) ? true : nil
                }
                // The issuer registers once the TSP is up (it retries until then).
                _ = try PythonClientInteropTests.waitFor(issuerProcess.process, "the Python issuer's registration") {
                    stdout().contains("python-issuer: registered with the TSP") ? true : nil
                }
            } catch {
                parties.stop()
                if parties.tspLog.contains("Address already in use") {
                    throw PythonWalletInteropTests.Nodes.PortTaken()
                }
                throw error
            }
            return parties
        }
    }
}
