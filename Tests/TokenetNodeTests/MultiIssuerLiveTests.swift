import Foundation
import Testing
import TokenetNode
import TokenetTestSupport

/// One tsp-node serving two issuer-nodes, each with its own certificate (`gen-certs --node issuer/issuer-2`), its own
/// cards and BIN ranges, and its own address at the TSP (`--issuer second-bank=HOST:PORT --issuer HOST:PORT`):
/// each card's eligibility check and digitization decision reach its own issuer's node, never the other, and each
/// issuer's app sees only its own card in the wallet. With the two addresses swapped, neither node is asked anything:
/// the TSP finds the wrong node at each address and leaves both issuers' cards to the stand-in.
@Suite(.serialized) struct MultiIssuerLiveTests {
    @Test(.timeLimit(.minutes(5))) func eachIssuerNodeDecidesItsOwnCards() async throws {
        try await offThePool { try Self.twoIssuers(swapped: false) }
    }

    @Test(.timeLimit(.minutes(5))) func swappedAddressesReachNeitherNode() async throws {
        try await offThePool { try Self.twoIssuers(swapped: true) }
    }

    static func twoIssuers(swapped: Bool) throws {
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
        let walletPort = try freeLoopbackPort()
        let tspAddress = "127.0.0.1:\(tspPort)"
        let walletAddress = "127.0.0.1:\(walletPort)"
        func node(_ name: String, _ directory: String, _ arguments: [String]) throws -> LaunchedProcess {
            try LaunchedProcess(
                niced: name,
                arguments + [
                    "--data-dir", data.path(directory), "--ready-file", data.path("\(directory).ready"),
                    "--log-level", "debug", "--parent-pid", "\(getpid())",
                ])
        }
        // Swapped: second-bank's address is the first node's, and the address for every other issuer the second's.
        let (everyOther, secondBanks) = swapped ? (secondPort, firstPort) : (firstPort, secondPort)
        let tsp = try node(
            "tsp-node", "tsp",
            tls("tsp") + [
                "--listen", tspAddress, "--issuer", "127.0.0.1:\(everyOther)",
                "--issuer", "second-bank=127.0.0.1:\(secondBanks)",
            ])
        defer { PythonClientInteropTests.stop(tsp.process) }
        // Each issuer node runs its app's link to the wallet (--wallet), which retries until the wallet is up.
        let first = try node(
            "issuer-node", "first",
            tls("issuer") + [
                "--listen", "127.0.0.1:\(firstPort)", "--tsp", tspAddress, "--wallet", walletAddress,
                "--fixtures", Self.fixture,
            ])
        defer { PythonClientInteropTests.stop(first.process) }
        let secondNode = try node(
            "issuer-node", "second",
            tls("issuer-2") + [
                "--listen", "127.0.0.1:\(secondPort)", "--tsp", tspAddress, "--wallet", walletAddress,
                "--fixtures", second,
            ])
        defer { PythonClientInteropTests.stop(secondNode.process) }
        let wallet = try node(
            "wallet-node", "wallet", tls("wallet") + ["--listen", walletAddress, "--tsp", tspAddress])
        defer { PythonClientInteropTests.stop(wallet.process) }

        _ = try PythonClientInteropTests.waitFor(wallet.process, "wallet-node's ready file") {
            FileManager.default.fileExists(atPath: data.path("wallet.ready")) ? true : nil
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
        #expect(log(tsp).contains("issuer address issuer=second-bank address=127.0.0.1:\(secondBanks)"))

        let operatorTLS = [
            "--cacert", "\(pki)/ca.pem", "--cert", "\(pki)/operator.pem", "--key", "\(pki)/operator.key",
        ]
        /// Adds and digitizes a card; the trace id of the digitization.
        func digitize(_ pan: String, expiry: String, reference: String) throws -> String {
            let added = try LaunchedProcess.run(
                "tokenet",
                ["wallet", "add-card", walletAddress, "--pan", pan, "--exp", expiry, "--cvc", "123"] + operatorTLS)
            try #require(added.status == 0, "add-card: \(added.stdout)\(added.stderr)")
            #expect(added.stdout.hasPrefix("\(reference): "), "\(added.stdout)")
            let accepted = try LaunchedProcess.run(
                "tokenet", ["wallet", "accept-terms", walletAddress, reference] + operatorTLS)
            try #require(accepted.status == 0, "accept-terms: \(accepted.stdout)\(accepted.stderr)")
            if !swapped { #expect(accepted.stdout.contains("APPROVED"), "\(accepted.stdout)") }
            let trace = accepted.stdout.components(separatedBy: "(trace ").last?.prefix { $0 != ")" }
            return String(try #require(trace))
        }
        let secondTrace = try digitize(approved, expiry: "12/29", reference: "card-1")
        let firstTrace = try digitize("4761000010000009", expiry: "12/29", reference: "card-2")

        if swapped {
            // Nothing was sent to either node: no eligibility question, no decision.
            #expect(!log(first).contains("IssuerDecisions/"), "tokenet-bank's log:\n\(log(first))")
            #expect(!log(secondNode).contains("IssuerDecisions/"), "second-bank's log:\n\(log(secondNode))")
            let refused = log(tsp).split(separator: "\n").filter { $0.contains("leads to another node") }
            #expect(
                refused.contains {
                    $0.contains("issuer=second-bank") && $0.contains("registered_node=issuer-2")
                        && $0.contains("answering_node=issuer-1")
                }, "tsp's log:\n\(log(tsp))")
            #expect(
                refused.contains {
                    $0.contains("issuer=tokenet-bank") && $0.contains("registered_node=issuer-1")
                        && $0.contains("answering_node=issuer-2")
                }, "tsp's log:\n\(log(tsp))")
            #expect(
                log(tsp).split(separator: "\n").contains {
                    $0.contains("decided_by=stand-in") && $0.contains("trace_id=\(secondTrace)")
                }, "tsp's log:\n\(log(tsp))")
            return
        }

        let decided = "IssuerDecisions/AuthorizeDigitization peer=tokenet://tsp/tsp-1 status=OK"
        func decides(_ process: LaunchedProcess, _ trace: String) -> Bool {
            log(process).split(separator: "\n").contains { $0.contains(decided) && $0.contains("trace_id=\(trace)") }
        }
        #expect(decides(secondNode, secondTrace), "second-bank's log:\n\(log(secondNode))")
        #expect(!decides(first, secondTrace))
        #expect(decides(first, firstTrace), "tokenet-bank's log:\n\(log(first))")
        #expect(!decides(secondNode, firstTrace))

        // Each bank's app lists its own card only: the wallet shows a token to the app of the node the TSP named.
        let cards = try LaunchedProcess.run("tokenet", ["wallet", "cards", walletAddress, "--json"] + operatorTLS)
        let listed = try JSONSerialization.jsonObject(with: Data(cards.stdout.utf8)) as? [String: Any]
        let ids = (listed?["cards"] as? [[String: Any]] ?? []).compactMap { $0["digitalCardId"] as? String }
        try #require(ids.count == 2, "\(cards.stdout)")
        func appView(_ port: UInt16, showing digitalCardID: String) throws -> [String] {
            let deadline = Date().addingTimeInterval(90)
            var shown: [String] = []
            while Date() < deadline {
                let view = try LaunchedProcess.run(
                    "tokenet", ["issuer", "app-view", "127.0.0.1:\(port)", "--json"] + operatorTLS)
                let object = try? JSONSerialization.jsonObject(with: Data(view.stdout.utf8)) as? [String: Any]
                shown = (object?["cards"] as? [[String: Any]] ?? []).compactMap { $0["digitalCardId"] as? String }
                if object?["listening"] as? Bool == true, shown.contains(digitalCardID) { return shown }
                Thread.sleep(forTimeInterval: 0.2)
            }
            return shown
        }
        #expect(try appView(secondPort, showing: ids[0]) == [ids[0]])
        #expect(try appView(firstPort, showing: ids[1]) == [ids[1]])
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
