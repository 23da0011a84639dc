import Foundation
import Testing
import TokenetTestSupport

@testable import TokenetNode

/// A wallet provider written in Python from the `.proto` files and the documentation alone
/// (`Tools/interop/python-wallet`, over `tokenet_client.py`), with the wallet role's certificate, against a real
/// `tsp-node` and an `issuer-node` loaded with the demo fixture: the card data it encrypts as a JWE is what the TSP
/// expects, an approved card ends with an ACTIVE token, a declined one with none, and a stepped-up one ACTIVE after
/// the one-time code the issuer sent.
@Suite struct PythonWalletInteropTests {
    /// The fixture's full card numbers, which nothing may print.
    static let fixturePANs = ["4761000010000009", "2223000010000047", "4761000030000054"]

    /// Expects none of the full card numbers `pans` in `texts` (a script's output, the nodes' logs).
    static func expectNoPAN(of pans: [String] = fixturePANs, in texts: [String]) {
        for pan in pans {
            #expect(!texts.contains { $0.contains(pan) }, "a full card number ending \(pan.suffix(4)) was printed")
        }
    }

    /// What the runs printed and how the nodes ended, gathered off the cooperative pool (`offThePool`): the runs
    /// take seconds of waiting for child processes.
    struct Outcome: Sendable {
        var all: ProcessResult
        var inactive: ProcessResult
        var failed: ProcessResult
        var logs: [String]
        var nodesExitedCleanly: [Bool]
    }

    static func run() throws -> Outcome {
        let pki = DevelopmentPKI.shared
        let nodes = try Nodes.start(pki)
        defer { nodes.stop() }
        let common = ["--tsp", nodes.tsp, "--pki", pki.directory.path]
        let all = try PythonClientInteropTests.runCheck(
            common + ["--issuer", nodes.issuer], script: "Tools/interop/python-wallet")
        // Without the issuer's outbox the wallet cannot get the code: the stepped-up token stays INACTIVE.
        let inactive = try PythonClientInteropTests.runCheck(
            common + ["--scenario", "step-up"], script: "Tools/interop/python-wallet")
        // A card that does not end as expected fails the run: here the script is told the approved card is declined.
        let data = try TemporaryDirectory()
        let fixture = try String(contentsOfFile: PackageRoot.path("Tools/fixtures/issuer.json"), encoding: .utf8)
        let wrong = fixture.replacingOccurrences(of: "\"rule\": \"decline\"", with: "\"rule\": \"declined-later\"")
            .replacingOccurrences(
                of: "\"digitization\": {\"rule\": \"approve\"}", with: "\"digitization\": {\"rule\": \"decline\"}")
        try wrong.write(toFile: data.path("issuer.json"), atomically: true, encoding: .utf8)
        let failed = try PythonClientInteropTests.runCheck(
            common + ["--scenario", "declined", "--fixtures", data.path("issuer.json")],
            script: "Tools/interop/python-wallet")
        var exits: [Bool] = []
        for node in [nodes.tspNode, nodes.issuerNode] {
            node.process.send(SIGTERM)
            node.process.waitUntilExit(killingAfter: 30)
            exits.append(node.process.termination?.isCleanExit == true)
        }
        return Outcome(
            all: all, inactive: inactive, failed: failed, logs: [nodes.tspLog, nodes.issuerLog],
            nodesExitedCleanly: exits)
    }

    @Test func aPythonWalletProvisionsApprovedDeclinedAndSteppedUpCards() async throws {
        let outcome = try await offThePool { try Self.run() }
        let result = outcome.all
        let output = result.stdout
        let lines = output.split(separator: "\n")
        #expect(result.status == 0, "stdout:\n\(output)\nstderr:\n\(result.stderr)")
        let results = lines.filter { $0.hasPrefix("RESULT ") }
        #expect(results.count == 3, "\(output)")
        #expect(results.first { $0.hasPrefix("RESULT approved ok: token DNIT") && $0.hasSuffix(" is ACTIVE") } != nil)
        #expect(results.contains { $0.hasPrefix("RESULT declined ok: DECLINED, no token for the wallet: ") })
        #expect(results.first { $0.hasPrefix("RESULT step-up ok: token DNIT") && $0.hasSuffix(" is ACTIVE") } != nil)
        #expect(lines.last == "python-wallet: 3 of 3 scenarios as expected", "\(output)")
        // Each step as the wallet saw it: eligibility with T&C, the issuer's decisions, the OTP step-up.
        for step in [
            "[approved] CheckEligibility: eligible, VISA card ending 0009; T&C ",
            "[approved] Digitize: APPROVED (decided by issuer): digital card DNIT",
            "[declined] Digitize: DECLINED (decided by issuer): the account is under fraud review",
            "[step-up] Digitize: REQUIRE_ADDITIONAL_AUTHENTICATION (decided by issuer)",
            "[step-up] SubmitOtp with a wrong code: INCORRECT_CODE, 2 tries left, token INACTIVE",
            "[step-up] SubmitOtp with the code from the SMS: SUCCESS",
        ] {
            #expect(output.contains(step), "no \(step) in:\n\(output)")
        }
        // The TSP's own records agree with what the wallet was told.
        #expect(lines.filter { $0.contains("the TSP's view (as the operator)") }.count == 3, "\(output)")
        Self.expectNoPAN(in: [output, result.stderr] + outcome.logs)

        let inactive = outcome.inactive
        #expect(inactive.status == 0, "stdout:\n\(inactive.stdout)\nstderr:\n\(inactive.stderr)")
        #expect(
            inactive.stdout.split(separator: "\n").contains {
                $0.hasPrefix("RESULT step-up ok: token DNIT") && $0.hasSuffix(" is INACTIVE")
            },
            "\(inactive.stdout)")

        let failed = outcome.failed
        #expect(failed.status == 1, "stdout:\n\(failed.stdout)\nstderr:\n\(failed.stderr)")
        #expect(failed.stdout.contains("RESULT declined FAIL: expected DECLINED"), "\(failed.stdout)")
        #expect(outcome.nodesExitedCleanly == [true, true])
    }

    /// A tsp-node and an issuer-node over mutual TLS, each knowing the other, once the issuer has registered.
    struct Nodes {
        let tspNode: LaunchedProcess
        let issuerNode: LaunchedProcess
        let tsp: String
        let issuer: String
        /// The nodes' data directories, kept for as long as the nodes run: let go, it was deleted under them.
        let data: TemporaryDirectory

        var tspLog: String { (try? String(contentsOfFile: tspNode.directory.path("stderr"), encoding: .utf8)) ?? "" }
        var issuerLog: String {
            (try? String(contentsOfFile: issuerNode.directory.path("stderr"), encoding: .utf8)) ?? ""
        }

        func stop() {
            PythonClientInteropTests.stop(tspNode.process)
            PythonClientInteropTests.stop(issuerNode.process)
        }

        /// The issuer listens on a port of its own choosing; the TSP, which must know the issuer's address when it
        /// starts, on a port picked just before (another process may take it in between: then again, twice).
        static func start(_ pki: DevelopmentPKI) throws -> Nodes {
            try PortTaken.retrying { try startOnce(pki) }
        }

        /// The port picked for the TSP was taken before it could bind it.
        struct PortTaken: Error {
            /// Runs `body` up to three times while it throws `PortTaken`.
            static func retrying<T>(_ body: () throws -> T) throws -> T {
                var attempt = 1
                while true {
                    do {
                        return try body()
                    } catch is PortTaken where attempt < 3 {
                        attempt += 1
                    }
                }
            }
        }

        static func startOnce(_ pki: DevelopmentPKI) throws -> Nodes {
            func tls(_ role: String) -> [String] {
                ["--cert", pki.path("\(role).pem"), "--key", pki.path("\(role).key"), "--ca", pki.path("ca.pem")]
            }
            let data = try TemporaryDirectory()
            let tsp = "127.0.0.1:\(try freeLoopbackPort())"
            let issuerReady = data.path("issuer-ready.json")
            let issuerNode = try LaunchedProcess(
                "issuer-node",
                [
                    "--listen", "127.0.0.1:0", "--data-dir", data.path("issuer"), "--ready-file", issuerReady,
                    "--tsp", tsp, "--fixtures", PackageRoot.path("Tools/fixtures/issuer.json"),
                ] + tls("issuer"))
            let issuer: String
            do {
                issuer = try PythonClientInteropTests.waitFor(issuerNode.process, "issuer-node's ready file") {
                    FileManager.default.fileExists(atPath: issuerReady)
                        ? try ReadyFile.read(from: issuerReady).listen : nil
                }
            } catch {
                PythonClientInteropTests.stop(issuerNode.process)
                throw error
            }
            let tspReady = data.path("tsp-ready.json")
            let tspNode = try LaunchedProcess(
                "tsp-node",
                ["--listen", tsp, "--data-dir", data.path("tsp"), "--ready-file", tspReady, "--issuer", issuer]
                    + tls("tsp"))
            let nodes = Nodes(tspNode: tspNode, issuerNode: issuerNode, tsp: tsp, issuer: issuer, data: data)
            do {
                _ = try PythonClientInteropTests.waitFor(tspNode.process, "tsp-node's ready file") {
                    FileManager.default.fileExists(atPath: tspReady) ? true : nil
                }
                // The issuer registers with the TSP in the background (retrying until the TSP is up); its cards are
                // unknown to the TSP until then.
                _ = try PythonClientInteropTests.waitFor(issuerNode.process, "the issuer's registration") {
                    nodes.issuerLog.contains("registered with the TSP") ? true : nil
                }
            } catch {
                nodes.stop()
                if nodes.tspLog.contains("Address already in use") { throw PortTaken() }
                throw error
            }
            return nodes
        }
    }
}
