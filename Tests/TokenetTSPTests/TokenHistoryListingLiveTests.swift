import Foundation
import Testing
import TokenetNode
import TokenetTestSupport
import TokenetTransport

@testable import TokenetTSP

/// `tokenet tsp history` against a tsp-node holding a token with more events than one page of the largest size
/// (`PageRequest.maximumSize`): the CLI walks every page and prints each event once, in order, as a table and as one
/// JSON listing.
@Suite(.serialized) struct TokenHistoryListingLiveTests {
    static let count = PageRequest.maximumSize + 203

    @Test(.timeLimit(.minutes(3))) func everyPageIsListed() async throws {
        let (tsp, tokens) = try await TokenHistoryListingTests.tspWithHistory(changes: Self.count)
        let node = try await LiveNodeTests.Node(dataDirectory: tsp.directory, issuerPort: try freeLoopbackPort())
        defer { node.kill() }
        let address = "127.0.0.1:\(node.port)"
        let pki = DevelopmentPKI.shared
        let operatorTLS = [
            "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
        ]
        let reasons = (0..<Self.count).map { "r-\($0)" }

        let json = try await offThePool {
            try Self.run(["tsp", "history", address, tokens[0], "--json"] + operatorTLS)
        }
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(listing["nextPageToken"] == nil)
        let events = try #require(listing["events"] as? [[String: Any]])
        #expect(
            events.filter { $0["actor"] as? String == "operator" }.compactMap { $0["reason"] as? String } == reasons)

        let table = try await offThePool { try Self.run(["tsp", "history", address, tokens[0]] + operatorTLS) }
        let rows = table.split(separator: "\n").compactMap { line in line.split(separator: " ").last.map(String.init) }
        #expect(rows.filter { $0.hasPrefix("r-") } == reasons)
    }

    /// The standard output of a `tokenet` command that succeeds.
    static func run(_ arguments: [String]) throws -> String {
        let process = try SpawnedProcess(
            try BuiltExecutables.url(of: "tokenet").path, arguments, standardOutput: .pipe, standardError: .nullDevice)
        let data = process.standardOutput!.readDataToEndOfFile()
        let termination = process.waitUntilExit(killingAfter: 60)
        try #require(termination.status == 0, "tokenet \(arguments) exited \(termination.status)")
        return String(decoding: data, as: UTF8.self)
    }
}
