import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetTestSupport

@testable import TokenetIssuer

@Suite struct IssuerStoreTests {
    func temporaryDirectory() throws -> String { try TestScratch.path("issuer") }

    /// A database damaged past its header opens, and the migrations' first read fails: that was "cannot migrate the
    /// issuer database", naming neither the file nor what to do.
    @Test func aDatabaseDamagedPastItsHeaderIsNamedWithWhatToDo() throws {
        let directory = try temporaryDirectory()
        let path = (directory as NSString).appendingPathComponent("issuer.sqlite")
        let store = try IssuerStore.open(directory: directory)
        try store.importFixture(try Support.fixture())
        try store.database.close()
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try file.seekToEnd()
        // Every page after the first, which holds the header and the schema.
        try file.seek(toOffset: 4096)
        try file.write(contentsOf: Data(repeating: 0x5A, count: Int(size) - 4096))
        try file.close()
        let error = #expect(throws: IssuerError.self) { try IssuerStore.open(directory: directory) }
        #expect(
            error?.message.contains("\(path) is damaged: restore it from a backup") == true,
            "\(String(describing: error))")
        // The operator's to restore before a restart can help: status 2, like a database the node cannot write.
        #expect(try IssuerNode.startFailure(#require(error), directory: directory).exitStatus == 2)
    }

    /// A data directory keeps one issuer's cards: another bank's fixture on it is refused, naming both; it mixed
    /// the two banks' cards, and the node pushed and enrolled cards outside its BIN ranges.
    /// Forgetting tokens recorded unknown to the TSP, when none of them is, writes nothing: it took the database's
    /// write lock for nothing, and another process holding it made an operator's command wait 5 s and log a warning.
    @Test func forgettingTokensNoneOfWhichIsRecordedWritesNothing() throws {
        let directory = try temporaryDirectory()
        let store = try IssuerStore.open(directory: directory)
        let other = try Database.open(path: IssuerStore.path(in: directory), options: .init(busyTimeout: .zero))
        // Without the read first, the write waits out the lock and throws "database is locked".
        let forgotten = try other.transaction { tx in
            try tx.execute("CREATE TABLE held_lock (x)")
            return try store.forgetUnknownTokens(["DNITHE1", "DNITHE2"])
        }
        #expect(forgotten.isEmpty)
    }

    @Test func anotherIssuersFixtureIsRefusedOnADataDirectory() throws {
        let store = try IssuerStore(
            database: try Database.openInMemory(), vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        try store.importFixture(try Support.fixture())
        var other = try Support.fixture()
        let stored = other.issuer.id
        other.issuer.id = "fourth-bank"
        let error = #expect(throws: IssuerError.self) { try store.importFixture(other) }
        #expect(error?.code == .fixture)
        #expect(
            error?.message.contains(
                "the data directory holds the cards of issuer \(stored), and the fixture is issuer fourth-bank's")
                == true,
            "\(String(describing: error))")
        // The same issuer's fixture, edited, still loads.
        var edited = try Support.fixture()
        edited.issuer.name = "Renamed Bank"
        try store.importFixture(edited)
    }

    /// A data directory whose issuer database, loaded with the fixture, has the first page of `table` overwritten;
    /// and the database's path.
    func databaseWithADamagedPage(of table: String) throws -> (directory: String, path: String) {
        let directory = try temporaryDirectory()
        let path = (directory as NSString).appendingPathComponent("issuer.sqlite")
        let store = try IssuerStore.open(directory: directory)
        try store.importFixture(try Support.fixture())
        let root = try #require(
            try store.database.queryOne("SELECT rootpage FROM sqlite_master WHERE name = ?", [table])?.int(0))
        let pageSize = try #require(try store.database.queryOne("PRAGMA page_size")?.int(0))
        try store.database.close()
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try file.seek(toOffset: UInt64((root - 1) * pageSize))
        try file.write(contentsOf: Data(repeating: 0x5A, count: Int(pageSize)))
        try file.close()
        return (directory, path)
    }

    /// A damaged page of the cards table is first read by the vault key's check, which said "cannot check the vault
    /// key", pointing at the key instead of the file to restore.
    @Test func aDamagedPageOfCardsIsNamedWithWhatToDo() throws {
        let (directory, path) = try databaseWithADamagedPage(of: "cards")
        let error = #expect(throws: IssuerError.self) { try IssuerStore.open(directory: directory) }
        #expect(
            error?.message == "the issuer database \(path) is damaged: restore it from a backup, with its vault key",
            "\(String(describing: error))")
        #expect(try IssuerNode.startFailure(#require(error), directory: directory).exitStatus == 2)
    }

    /// Damage met past the open, by the start's other reads (the app's notifications, the fixture loaded again),
    /// names the file and what to do, with status 2: it exited 1 with SQLite's words, or blamed the fixture.
    @Test(arguments: ["app_inbox", "cardholders"])
    func aDamagedPageReadLaterInTheStartIsNamedWithWhatToDo(table: String) throws {
        let (directory, path) = try databaseWithADamagedPage(of: table)
        let reopened = try IssuerStore.open(directory: directory)
        defer { try? reopened.database.close() }
        let error = #expect(throws: IssuerError.self) {
            if table == "app_inbox" {
                _ = try IssuerAppNotificationHandler(view: IssuerAppView(), logger: Support.logger(), store: reopened)
            } else {
                try reopened.importFixture(try Support.fixture())
            }
        }
        let failure = try IssuerNode.startFailure(#require(error), directory: directory)
        #expect(failure.exitStatus == 2)
        #expect(
            failure.message == "the issuer database \(path) is damaged: restore it from a backup, with its vault key",
            "\(failure)")
    }

    /// A card renamed in the fixture is refused at load: it was added as a second card with the same number, and
    /// the first, with its old rule, went on deciding the card's digitizations.
    @Test func aCardRenamedInTheFixtureIsRefused() throws {
        let store = try Support.store()
        var fixture = try Support.fixture()
        let index = try #require(fixture.cards.firstIndex { $0.id == "card-visa-approve" })
        fixture.cards[index].id = "zz-visa"
        let error = #expect(throws: IssuerError.self) { try store.importFixture(fixture) }
        #expect(error?.code == .fixture)
        #expect(
            error?.message
                == "fixture card zz-visa has the card number ending 0009, which card card-visa-approve holds in this "
                + "data directory (loaded before): a card keeps its id and its number from one load to the next, so "
                + "give zz-visa back its old id if it was renamed, or its own number if two cards swapped theirs, or "
                + "start on a new data directory", "\(String(describing: error))")
        #expect(try store.card(id: "zz-visa") == nil)
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

    /// A pending renewal is part of its card as the store reads it, with when it was reserved: repeating the renewal
    /// keeps that time, settling it clears both.
    @Test func aPendingRenewalIsReadWithItsCardAndSince() throws {
        let store = try Support.store()
        let renewal = PendingRenewal(pan: try PAN("4761000010000017"), expiry: try CardExpiry(parsing: "12/31"))
        let reserved = Date(timeIntervalSince1970: 1_790_000_000)
        #expect(try store.card(id: Cards.visaApprove.0)?.pendingRenewal == nil)
        _ = try store.reserveRenewal(id: Cards.visaApprove.0, pan: renewal.pan, expiry: renewal.expiry, at: reserved)
        let pending = try #require(try store.card(id: Cards.visaApprove.0)?.pendingRenewal)
        #expect(pending.renewal == renewal && pending.since == reserved)
        #expect(try store.card(id: Cards.visaApprove.0)?.pan.digits == Cards.visaApprove.1)

        let plan = try store.reserveRenewal(
            id: Cards.visaApprove.0, pan: renewal.pan, expiry: renewal.expiry, at: reserved.addingTimeInterval(3600))
        #expect(plan == .resume)
        #expect(try store.card(id: Cards.visaApprove.0)?.pendingRenewal?.since == reserved)
        #expect(try store.allCards().filter { $0.pendingRenewal != nil }.map(\.id) == [Cards.visaApprove.0])

        try store.settleRenewal(id: Cards.visaApprove.0, renewal, .release)
        #expect(try store.card(id: Cards.visaApprove.0)?.pendingRenewal == nil)
        let since = try store.database.queryOne("SELECT count(*) FROM cards WHERE pending_since_ms IS NOT NULL")
        #expect(try since?.int(0) == 0)
    }

    /// A fixture giving a card the number another card's pending renewal has reserved is refused as a whole, naming
    /// both cards and the number by its last four digits: once the renewal completed, two cards would carry it.
    @Test func aFixtureCardWithANumberReservedByAPendingRenewalIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Support.store()
        _ = try store.reserveRenewal(
            id: Cards.visaApprove.0, pan: try PAN("4761000010000017"), expiry: try CardExpiry(parsing: "12/31"))
        // The card's own pending renewal does not stop the fixture loading again.
        try store.importFixture(try Support.fixture())

        var json = try Support.fixtureJSON()
        var cards = json["cards"] as! [[String: Any]]
        let index = try #require(cards.firstIndex { $0["id"] as? String == Cards.visaStepUp.0 })
        cards[index]["pan"] = "4761000010000017"
        cards[index]["cardholderName"] = "Changed Name"
        json["cards"] = cards
        let path = (directory as NSString).appendingPathComponent("taken.json")
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        do {
            try store.importFixture(try IssuerFixture.load(path: path))
            Issue.record("a fixture card with a reserved number was loaded")
        } catch {
            #expect(error.code == .fixture)
            #expect(
                error.message.contains(
                    "fixture card \(Cards.visaStepUp.0) has the card number ending 0017, which card "
                        + "\(Cards.visaApprove.0) has reserved for its pending renewal"), "\(error.message)")
            #expect(!error.message.contains("4761000010000017"))
        }
        let untouched = try #require(try store.card(id: Cards.visaStepUp.0))
        #expect(untouched.pan.digits == Cards.visaStepUp.1 && untouched.cardholderName != "Changed Name")
    }

    /// A fixture card past its expiry is loaded (declining expired cards is worth trying out) with a warning that
    /// names it by its last four digits; a card renewed since is judged by its renewed expiry.
    @Test func anExpiredFixtureCardIsLoadedWithAWarning() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var json = try Support.fixtureJSON()
        var cards = json["cards"] as! [[String: Any]]
        cards[0]["expiry"] = "01/20"
        cards[1]["expiry"] = "02/21"
        json["cards"] = cards
        let fixturePath = (directory as NSString).appendingPathComponent("expired.json")
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: fixturePath))
        let data = (directory as NSString).appendingPathComponent("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        let first = try IssuerParty.open(
            directory: data, fixturesPath: Support.fixturePath, logger: Support.logger(), tsp: nil, wallet: nil)
        try first.store.renewCard(
            id: "card-mc-receipt", pan: try PAN("5400000010000045"), expiry: try CardExpiry(parsing: "12/31"))
        try first.store.database.close()

        let sink = MemoryLogSink()
        let party = try IssuerParty.open(
            directory: data, fixturesPath: fixturePath, logger: Support.logger(sink), tsp: nil, wallet: nil)
        #expect(try party.store.card(id: "card-visa-approve")?.expiry.description == "01/20")
        let warnings = sink.lines.filter { $0.contains("fixture card has expired") }
        #expect(warnings.count == 1, "\(sink.lines)")
        #expect(warnings.first?.contains("card=card-visa-approve") == true, "\(warnings)")
        #expect(warnings.first?.contains("last4=0009") == true, "\(warnings)")
        #expect(warnings.first?.contains("expiry=01/20") == true, "\(warnings)")
        #expect(!sink.lines.joined().contains("4761000010000009"))
        try party.store.database.close()
    }

    /// The expiry warning reads the cards' clear columns and unseals nothing: a start with a fixture neither pays
    /// for opening every stored card nor fails on a card the fixture does not name whose sealed data is damaged
    /// (that card fails when it is used, with its own error).
    @Test func theExpiryCheckAtStartUnsealsNoCard() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = (directory as NSString).appendingPathComponent("data")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: false)
        let first = try IssuerParty.open(
            directory: data, fixturesPath: Support.fixturePath, logger: Support.logger(), tsp: nil, wallet: nil)
        var json = try Support.fixtureJSON()
        var cards = json["cards"] as! [[String: Any]]
        let dropped = try #require(cards.popLast()?["id"] as? String)
        cards[0]["expiry"] = "01/20"
        json["cards"] = cards
        _ = try first.store.database.execute(
            "UPDATE cards SET pan_sealed = zeroblob(60) WHERE id = ?", [dropped])
        try first.store.database.close()
        let fixturePath = (directory as NSString).appendingPathComponent("fewer.json")
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: fixturePath))

        let sink = MemoryLogSink()
        let party = try IssuerParty.open(
            directory: data, fixturesPath: fixturePath, logger: Support.logger(sink), tsp: nil, wallet: nil)
        let warnings = sink.lines.filter { $0.contains("fixture card has expired") }
        #expect(warnings.count == 1, "\(sink.lines)")
        #expect(warnings.first?.contains("last4=") == true, "\(warnings)")
        #expect(throws: IssuerError.self) { try party.store.card(id: dropped) }
        try party.store.database.close()
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

    /// A vault key that cannot open the issuer's sealed cards — deleted, replaced, or (for a database from before
    /// check values) other than the one its card numbers were sealed with — stops the node at start with status 2.
    @Test(arguments: ["missing", "replaced", "replaced, no check value"])
    func aVaultKeyThatDoesNotFitTheDatabaseIsRefused(change: String) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Support.logger()
        let first = try IssuerParty.open(
            directory: directory, fixturesPath: Support.fixturePath, logger: logger, tsp: nil, wallet: nil)
        let cards = try first.store.allCards().count
        if change.hasSuffix("no check value") { try first.store.database.execute("DELETE FROM vault_key_check") }
        try first.store.database.close()
        let keyFile = (directory as NSString).appendingPathComponent("issuer-vault.key")
        let original = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try FileManager.default.removeItem(atPath: keyFile)
        if change.hasPrefix("replaced") {
            try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyFile))
            chmod(keyFile, 0o600)
        }

        let error = try #require(throws: IssuerError.self) {
            _ = try IssuerParty.open(directory: directory, fixturesPath: nil, logger: logger, tsp: nil, wallet: nil)
        }
        let failure = IssuerNode.startFailure(error, directory: directory)
        #expect(failure.exitStatus == 2)
        let expected =
            change == "missing"
            ? "the vault key file \(keyFile) is missing" : "the vault key file \(keyFile) is not the key the database"
        #expect(failure.description.contains(expected), "\(failure)")
        #expect(failure.description.contains("restore the original \(keyFile), or remove the data directory"))
        #expect(FileManager.default.fileExists(atPath: keyFile) == change.hasPrefix("replaced"))

        try original.write(to: URL(fileURLWithPath: keyFile))
        chmod(keyFile, 0o600)
        let restored = try IssuerParty.open(
            directory: directory, fixturesPath: nil, logger: logger, tsp: nil, wallet: nil)
        #expect(try restored.store.allCards().count == cards)
        #expect(try restored.store.database.queryOne("SELECT COUNT(*) FROM vault_key_check")?.int(0) == 1)
    }

    /// A damaged check value is told apart from a wrong key (the key still opens the sealed cards), and a table of
    /// the schema that is gone is named; both stop the node with status 2 and point at a backup. They said the key
    /// was wrong (advising to remove the data directory) and gave SQLite's "no such table" with status 1.
    @Test func aDamagedCheckValueOrAMissingTableIsNamed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Support.logger()
        let path = (directory as NSString).appendingPathComponent("issuer.sqlite")
        let first = try IssuerParty.open(
            directory: directory, fixturesPath: Support.fixturePath, logger: logger, tsp: nil, wallet: nil)
        try first.store.database.execute("UPDATE vault_key_check SET sealed = x'0102'")
        try first.store.database.close()
        let damaged = try #require(throws: IssuerError.self) {
            _ = try IssuerParty.open(directory: directory, fixturesPath: nil, logger: logger, tsp: nil, wallet: nil)
        }
        let failure = IssuerNode.startFailure(damaged, directory: directory)
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description.hasPrefix(
                "the database \(path) has a damaged vault key check value (the key opens the database's sealed data "
                    + "but not the check value)"), "\(failure)")
        #expect(failure.description.contains("restore the database from a backup"), "\(failure)")
        #expect(!failure.description.contains("remove the data directory"), "\(failure)")

        let database = try Database.open(path: path)
        try database.execute("DROP TABLE vault_key_check")
        try database.close()
        let missing = try #require(throws: IssuerError.self) {
            _ = try IssuerParty.open(directory: directory, fixturesPath: nil, logger: logger, tsp: nil, wallet: nil)
        }
        let refusal = IssuerNode.startFailure(missing, directory: directory)
        #expect(refusal.exitStatus == 2)
        #expect(
            refusal.description.contains(
                "the database \(path) lacks the table vault_key_check of its schema (version "
                    + "\(IssuerStore.migrations.last!.version)): it was altered or damaged; restore it from a backup"),
            "\(refusal)")
        #expect(!refusal.description.contains("SQL"), "\(refusal)")
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

    /// A write the disk has no room for (SQLite's SQLITE_FULL, here from a database held to the size it has) keeps its
    /// StorageError, and the caller gets RESOURCE_EXHAUSTED saying what to do, as gRPC has it for a file system out of
    /// space; any other storage failure stays INTERNAL.
    @Test func aFullDiskIsResourceExhaustedWithWhatToDo() throws {
        let store = try Support.store()
        try FullDisk.hold(store.database)
        let error = #expect(throws: IssuerError.self) {
            try store.storage("record the renewal") { try FullDisk.overfill(store.database) }
        }
        #expect((error?.cause as? StorageError)?.code == .full, "\(String(describing: error))")
        let status = try #require(error).rpcError
        #expect(status.code == .resourceExhausted)
        #expect(
            status.message
                == "cannot record the renewal: the issuer's disk is full; free space on the disk that holds its data "
                + "directory, then try again")
        #expect(status.cause is ServerFailure, "the node's log gets the cause")
        let other = IssuerError(.storage, "cannot read the cards", cause: StorageError(.constraint, "UNIQUE failed"))
        #expect(other.rpcError.code == .internal)
    }

    /// A notification the issuer app cannot keep for a full disk is said at error level with what to do, and thrown
    /// (it comes again): it was only the subscriber's warning of a retry, in SQLite's words.
    @Test func aNotificationTheAppCannotKeepForAFullDiskIsAnError() async throws {
        let store = try Support.store()
        let logs = MemoryLogSink()
        let handler = try IssuerAppNotificationHandler(
            view: IssuerAppView(), logger: Support.logger(logs), store: store)
        try FullDisk.hold(store.database)
        var message = IssuerAppInboxTests.message(
            "AUTHN", body: .authn(.init(authnRequestID: "ar-1", amountMinor: 100, currency: "USD")), sender: "TNS")
        message.messageID = "m-full"
        // A row of about 100 KB: more than a database held to its size has room for.
        message.topic = String(repeating: "x", count: 100_000)
        await #expect(throws: IssuerError.self) { try await handler.handle(message) }
        #expect(
            logs.lines.contains {
                $0.contains(" error ") && $0.contains("notification could not be kept")
                    && $0.contains("the issuer's disk is full; free space on the disk")
            }, "\(logs.lines)")
        try FullDisk.release(store.database)
        try await handler.handle(message)
    }

    /// A data directory that refuses writes (an I/O error, a read-only file or mount) is the operator's to mend:
    /// UNAVAILABLE with where to look, where INTERNAL read as a fault of the issuer's own.
    @Test func anUnwritableDataDirectoryIsUnavailableWithWhereToLook() {
        let error = IssuerError(.storage, "cannot record the renewal", cause: StorageError(.io, "disk I/O error"))
        let status = error.rpcError
        #expect(status.code == .unavailable)
        #expect(
            status.message
                == "cannot record the renewal: the issuer cannot use its data directory (disk I/O error); check the "
                + "disk that holds it, the directory's and its files' mode and owner (and lsattr), and whether it is "
                + "mounted read-only, then try again")
        #expect(status.cause is ServerFailure, "the node's log gets the cause")
    }

    /// A damaged page fails the same way at every retry: DATA_LOSS with the file to restore, where it was INTERNAL
    /// and left the caller to try again.
    @Test func aDamagedDatabaseIsDataLossWithWhatToRestore() {
        let error = IssuerError(
            .storage, "cannot read the cards", cause: StorageError(.corrupt, "database disk image is malformed"))
        let status = error.rpcError
        #expect(status.code == .dataLoss)
        #expect(
            status.message
                == "cannot read the cards: the issuer's database is damaged; a retry will not help: stop the issuer "
                + "and restore issuer.sqlite in its data directory from a backup")
        #expect(status.cause is ServerFailure, "the node's log gets the cause")
    }
}
