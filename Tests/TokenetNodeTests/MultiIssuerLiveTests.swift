import Foundation
import Testing
import TokenetNode
import TokenetTestSupport

/// One tsp-node serving two issuer-nodes, each with its own certificate (`gen-certs --node issuer/issuer-2`), its own
/// cards and BIN ranges, and its own address at the TSP (`--issuer second-bank=HOST:PORT --issuer HOST:PORT`):
/// each card's eligibility check and digitization decision reach its own issuer's node, never the other.
@Suite(.serialized) struct MultiIssuerLiveTests {
    @Test(.timeLimit(.minutes(5))) func eachIssuerNodeDecidesItsOwnCards() async throws {
        try await offThePool { try Self.twoIssuers() }
    }

    static func twoIssuers() throws {
        let data = try TemporaryDirectory()
        let pki = data.path("pki")
        let certificates = try LaunchedProcess(
            executable: PackageRoot.url.appendingPathComponent("Tools/gen-certs"), ["--node", "issuer/issuer-2", pki]
        ).waitForExit()
        try #require(certificates.status == 0, "gen-certs: \(certificates.stderr)")
        let second = data.path("second-bank.json")
        let approved = try secondBankFixture(writingTo: second)

        func tls(_ name: String) -> [String] {
            ["--cert", "\(pki)/\(name).pem", "--key", "\(pki)/\(name).key", "--ca", "\(pki)/ca.pem"]
        }
        let tspPort = try freeLoopbackPort()
        let firstPort = try freeLoopbackPort()
        let secondPort = try freeLoopbackPort()
        let tspAddress = "127.0.0.1:\(tspPort)"
        func node(_ name: String, _ directory: String, _ arguments: [String]) throws -> LaunchedProcess {
            try LaunchedProcess(
                niced: name,
                arguments + [
                    "--data-dir", data.path(directory), "--ready-file", data.path("\(directory).ready"),
                    "--log-level", "debug", "--parent-pid", "\(getpid())",
                ])
        }
        let tsp = try node(
            "tsp-node", "tsp",
            tls("tsp") + [
                "--listen", tspAddress, "--issuer", "127.0.0.1:\(firstPort)",
                "--issuer", "second-bank=127.0.0.1:\(secondPort)",
            ])
        defer { PythonClientInteropTests.stop(tsp.process) }
        let first = try node(
            "issuer-node", "first",
            tls("issuer") + [
                "--listen", "127.0.0.1:\(firstPort)", "--tsp", tspAddress, "--fixtures", Self.fixture,
            ])
        defer { PythonClientInteropTests.stop(first.process) }
        let secondNode = try node(
            "issuer-node", "second",
            tls("issuer-2") + ["--listen", "127.0.0.1:\(secondPort)", "--tsp", tspAddress, "--fixtures", second])
        defer { PythonClientInteropTests.stop(secondNode.process) }
        let wallet = try node(
            "wallet-node", "wallet", tls("wallet") + ["--listen", "127.0.0.1:0", "--tsp", tspAddress])
        defer { PythonClientInteropTests.stop(wallet.process) }

        let walletAddress = try PythonClientInteropTests.waitFor(wallet.process, "wallet-node's ready file") {
            let file = data.path("wallet.ready")
            return FileManager.default.fileExists(atPath: file) ? try ReadyFile.read(from: file).listen : nil
        }
        func log(_ process: LaunchedProcess) -> String {
            (try? String(contentsOfFile: process.directory.path("stderr"), encoding: .utf8)) ?? ""
        }
        // Both issuers registered (each retries until the TSP answers).
        _ = try PythonClientInteropTests.waitFor(tsp.process, "both registrations") {
            let lines = log(tsp)
            return lines.contains("issuer registered issuer=second-bank")
                && lines.contains("issuer registered issuer=tokenet-bank") ? true : nil
        }
        #expect(log(tsp).contains("issuer address issuer=second-bank address=127.0.0.1:\(secondPort)"))

        let operatorTLS = [
            "--cacert", "\(pki)/ca.pem", "--cert", "\(pki)/operator.pem", "--key", "\(pki)/operator.key",
        ]
        /// Adds and digitizes a card; the trace id of the digitization.
        func digitize(_ pan: String, expiry: String, reference: String) throws -> String {
            let added = try LaunchedProcess.run(
                "tokenet", ["wallet", "add-card", walletAddress, "--pan", pan, "--exp", expiry] + operatorTLS)
            try #require(added.status == 0, "add-card: \(added.stdout)\(added.stderr)")
            #expect(added.stdout.hasPrefix("\(reference): "), "\(added.stdout)")
            let accepted = try LaunchedProcess.run(
                "tokenet", ["wallet", "accept-terms", walletAddress, reference] + operatorTLS)
            try #require(accepted.status == 0, "accept-terms: \(accepted.stdout)\(accepted.stderr)")
            #expect(accepted.stdout.contains("APPROVED"), "\(accepted.stdout)")
            let trace = accepted.stdout.components(separatedBy: "(trace ").last?.prefix { $0 != ")" }
            return String(try #require(trace))
        }
        let secondTrace = try digitize(approved, expiry: "12/29", reference: "card-1")
        let firstTrace = try digitize("4761000010000009", expiry: "12/29", reference: "card-2")

        let decided = "IssuerDecisions/AuthorizeDigitization peer=tokenet://tsp/tsp-1 status=OK"
        func decides(_ process: LaunchedProcess, _ trace: String) -> Bool {
            log(process).split(separator: "\n").contains { $0.contains(decided) && $0.contains("trace_id=\(trace)") }
        }
        #expect(decides(secondNode, secondTrace), "second-bank's log:\n\(log(secondNode))")
        #expect(!decides(first, secondTrace))
        #expect(decides(first, firstTrace), "tokenet-bank's log:\n\(log(first))")
        #expect(!decides(secondNode, firstTrace))
    }

    static let fixture = PackageRoot.path("Tools/fixtures/issuer.json")

    /// The demo fixture as another bank: its own issuer id and BIN ranges (4762…, 5401…, 2224…), each card number
    /// moved into them with its check digit made right again. Returns the number of the card the bank approves.
    static func secondBankFixture(writingTo path: String) throws -> String {
        let text = try String(contentsOfFile: fixture, encoding: .utf8)
        var moved = text.replacingOccurrences(of: #""id": "tokenet-bank""#, with: #""id": "second-bank""#)
        for (from, to) in [("4761", "4762"), ("5400", "5401"), ("2223", "2224")] {
            moved = moved.replacingOccurrences(of: #""low": "\#(from)"#, with: #""low": "\#(to)"#)
            moved = moved.replacingOccurrences(of: #""high": "\#(from)"#, with: #""high": "\#(to)"#)
        }
        let pan = try Regex(#""pan": "(\d+)""#)
        var approved = ""
        for match in text.matches(of: pan).reversed() {
            guard let number = match.output[1].substring.map(String.init) else { continue }
            let prefix = [("4761", "4762"), ("5400", "5401"), ("2223", "2224")].first { number.hasPrefix($0.0) }
            guard let prefix else { continue }
            let body = prefix.1 + number.dropFirst(4).dropLast()
            let card = body + String(luhnCheckDigit(body))
            if number == "4761000010000009" { approved = card }
            moved = moved.replacingOccurrences(of: #""pan": "\#(number)""#, with: #""pan": "\#(card)""#)
        }
        try #require(!approved.isEmpty && moved.contains(#""id": "second-bank""#))
        try moved.write(toFile: path, atomically: true, encoding: .utf8)
        return approved
    }

    static func luhnCheckDigit(_ body: String) -> Int {
        var sum = 0
        for (index, character) in body.reversed().enumerated() {
            var digit = character.wholeNumberValue ?? 0
            if index % 2 == 0 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return (10 - sum % 10) % 10
    }
}
