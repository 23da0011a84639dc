import Foundation
import Testing
import TokenetCard
import TokenetStorage

@testable import TokenetIssuer

@Suite struct IssuerStoreTests {
    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("issuer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func loadingTwiceChangesNothing() throws {
        let store = try Support.store()
        let before = try store.allCards().map { "\($0.id) \($0.pan.last4) \($0.rule.summary)" }
        try store.importFixture(try Support.fixture())
        let after = try store.allCards().map { "\($0.id) \($0.pan.last4) \($0.rule.summary)" }
        #expect(before == after)
        #expect(after.count == 9)
        #expect(try store.database.queryOne("SELECT count(*) FROM cardholders")?.int(0) == 3)
        #expect(try store.database.queryOne("SELECT count(*) FROM accounts")?.int(0) == 5)
    }

    /// A restart with the same `--fixtures` loads the file again; a card renewed in between keeps its new number
    /// and expiry (its tokens at the TSP stand for the renewed card), while the other cards and fields still follow
    /// the fixture.
    @Test func loadingAgainKeepsARenewal() throws {
        let store = try Support.store()
        try store.renewCard(
            id: "card-mc-receipt", pan: try PAN("5400000010000045"), expiry: try CardExpiry(parsing: "12/31"))
        try store.importFixture(try Support.fixture())
        let renewed = try #require(try store.card(id: "card-mc-receipt"))
        #expect(renewed.pan.last4 == "0045")
        #expect(renewed.expiry.description == "12/31")
        let untouched = try #require(try store.card(id: "card-visa-approve"))
        #expect(untouched.pan.last4 == "0009")
        #expect(untouched.expiry.description == "12/29")
    }

    @Test func survivesARestartWithoutTheFixtureAndKeepsNumbersSealed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Support.logger()
        let first = try IssuerParty.open(
            directory: directory, fixturesPath: Support.fixturePath, logger: logger, tsp: nil, wallet: nil)
        let kid = first.key.kid
        try first.store.database.close()

        let second = try IssuerParty.open(
            directory: directory, fixturesPath: nil, logger: logger, tsp: nil, wallet: nil)
        #expect(second.key.kid == kid)
        #expect(try second.store.profile()?.id == "tokenet-bank")
        let card = try #require(try second.store.card(matching: try PAN(Cards.mcScore.1)))
        #expect(card.id == Cards.mcScore.0)
        #expect(card.cvc == "987")
        try second.store.database.close()

        for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(file))
            for (_, number, _) in Cards.all {
                #expect(bytes.range(of: Data(number.utf8)) == nil, "\(file) holds a card number in clear")
            }
        }
        let keyPath = (directory as NSString).appendingPathComponent(IssuerKeyFile.fileName)
        let mode = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aKeyOthersCanReadIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try IssuerKeyFile.loadOrCreate(directory: directory)
        let keyPath = (directory as NSString).appendingPathComponent(IssuerKeyFile.fileName)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyPath)
        let error = #expect(throws: IssuerError.self) { try IssuerKeyFile.loadOrCreate(directory: directory) }
        #expect(error?.message.contains("chmod 600") == true)
    }
}
