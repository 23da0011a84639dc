import Foundation
import Testing
import TokenetNode
import TokenetTestSupport

@testable import TokenetWallet

/// `tokenet wallet cards`, `transactions` and `inbox` against a wallet-node holding more of each than one page of
/// the largest size (`PageRequest.maximumSize`): the CLI walks every page and prints each item once, in order, as
/// a table and as one JSON listing.
@Suite(.serialized) struct LiveWalletListingTests {
    static let count = PageRequest.maximumSize + 203

    @Test(.timeLimit(.minutes(3))) func everyPageIsListed() async throws {
        try await offThePool { try Self.listEveryPage() }
    }

    static func listEveryPage() throws {
        let pki = try TestPKI.directory()
        let scratch = try ScratchDirectory(data: [:])
        let store = try WalletStore.open(path: scratch.file("data/wallet.sqlite"))
        try WalletListingTests.seed(store, cards: count, transactions: count, notifications: count)
        try store.database.close()
        let node = try NodeProcess(
            "wallet-node", role: "wallet", pki: pki, directory: scratch, extra: ["--tsp", try freeLoopbackAddress()])
        let flags = [node.listen] + (try TestPKI.operatorFlags())

        let cards = try listing(["wallet", "cards"] + flags, key: "cards")
        #expect(cards.compactMap { $0["cardRef"] as? String } == (1...count).map { "card-\($0)" })
        let transactions = try listing(["wallet", "transactions"] + flags, key: "transactions")
        #expect(
            transactions.compactMap { $0["transactionId"] as? String } == WalletListingTests.listingOrder(count))
        let oneCard = try listing(
            ["wallet", "transactions", node.listen, "card-2"] + flags.dropFirst(), key: "transactions")
        #expect(
            oneCard.compactMap { $0["transactionId"] as? String } == WalletListingTests.listingOrder(count, of: [1]))
        let inbox = try listing(["wallet", "inbox"] + flags, key: "notifications")
        #expect(inbox.compactMap { $0["messageId"] as? String } == (0..<count).map { "m-\($0)" })

        let table = try runExecutable("tokenet", ["wallet", "cards"] + flags)
        try #require(table.status == 0, "\(table.stderr)")
        let rows = table.stdout.split(separator: "\n").dropFirst()
        #expect(rows.map { String($0.prefix { $0 != " " }) } == (1...count).map { "card-\($0)" })
    }

    /// The items of one `--json` listing, which holds no next_page_token: the CLI asked for every page.
    static func listing(_ arguments: [String], key: String) throws -> [[String: Any]] {
        let result = try runExecutable("tokenet", arguments + ["--json"])
        try #require(result.status == 0, "\(arguments): \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["nextPageToken"] == nil, "\(arguments)")
        return try #require(json[key] as? [[String: Any]], "\(arguments)")
    }
}
