import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetStorage
import TokenetWire

@testable import TokenetTSP

/// What survives a restart: issuers, tokens, answered requests, half-finished digitizations, keys.
@Suite struct RestartTests {
    @Test func sameRequestIDAfterRestartGivesTheSameToken() async throws {
        let clock = TestClock()
        let first = try TSPHarness.make(clock: clock)
        let eligibility = try await first.eligibleVisa()
        let before = try await first.digitize(eligibility, requestID: "req-1")

        let second = try TSPHarness.make(directory: first.directory, clock: clock)
        let after = try await second.digitize(eligibility, requestID: "req-1")
        #expect(after == before)
        #expect(second.issuer.state.withLock { $0.authorizations } == 0)
        #expect(try await second.control.listTokens(TspV1.ListTokensRequest()).tokens.count == 1)
    }

    /// Runs step one of Digitize alone on `tsp`'s database, as if the process died right after its commit: the
    /// digitization it leaves pending.
    static func crashAfterStepOne(
        _ tsp: TSPHarness, _ eligibility: TspV1.CheckEligibilityResponse, requestID: String, clock: TestClock
    ) throws -> PendingDigitization {
        let vault = try TSPKeyFiles.loadVault(dataDirectory: tsp.directory)
        let store = try TSPStore.open(path: tsp.directory + "/tsp.sqlite", key: vault)
        defer { try? store.database.close() }
        var request = TspV1.DigitizeRequest(
            requestID: requestID, eligibilityReceipt: eligibility.eligibilityReceipt, device: TSPHarness.device,
            walletAccountID: TSPHarness.account)
        if case .termsAndConditions(let terms) = eligibility.terms {
            request.acceptedTermsID = terms.id
            request.termsAcceptedAtMs = 1
        }
        // As the harness's wallet node, which checked the card's eligibility and alone may spend its receipt.
        let start = try store.beginDigitization(
            request, nowMs: clock.now.unixMilliseconds, traceID: "t", walletNodeID: "wallet-1"
        ) { pan, _ in
            NewToken(
                digitalCardID: DigitalCardID.generate(for: .visa)!,
                tokenPAN: try TokenPANGenerator.sandbox().generate(for: pan),
                expiry: try CardExpiry(month: 1, year: 2030))
        }
        return try #require(
            { if case .pending(let pending) = start { pending } else { nil } }(), "expected a pending digitization")
    }

    /// A crash after the token was stored but before the decision: the retry resumes with the same token.
    @Test func retryAfterACrashMidDigitizationFinishesTheSameToken() async throws {
        let clock = TestClock()
        let first = try TSPHarness.make(clock: clock)
        let eligibility = try await first.eligibleVisa()
        let pending = try Self.crashAfterStepOne(first, eligibility, requestID: "req-crash", clock: clock)

        let second = try TSPHarness.make(directory: first.directory, clock: clock)
        let response = try await second.digitize(eligibility, requestID: "req-crash")
        #expect(response.digitalCardID == pending.token.digitalCardID)
        #expect(response.decision == .approved)
        let tokens = try await second.control.listTokens(TspV1.ListTokensRequest()).tokens
        #expect(tokens.map(\.digitalCardID) == [pending.token.digitalCardID])
        #expect(tokens.first?.state == .active)
    }

    /// A token deleted while its digitization was left pending: the retry declines it without asking the issuer,
    /// which approved it before ("issuer approved" on a DEACTIVATED token) and got the card data for nothing.
    @Test func retryOfADigitizationWhoseTokenWasDeletedAsksNoIssuer() async throws {
        let clock = TestClock()
        let first = try TSPHarness.make(clock: clock)
        let eligibility = try await first.eligibleVisa()
        let pending = try Self.crashAfterStepOne(first, eligibility, requestID: "req-deleted", clock: clock)

        let second = try TSPHarness.make(directory: first.directory, clock: clock)
        let id = pending.token.digitalCardID
        _ = try await LifecycleTests.lifecycle(second, as: LifecycleTests.operator1).changeTokenState(
            LifecycleTests.change(id, .delete, "FRAUD_SUSPECTED"))
        let issuerView = IssuerTokensTests.updates(second, as: LifecycleTests.issuer1)
        let deleted = try await issuerView.getIssuerTokens(.init()).tokens
        let response = try await second.digitize(eligibility, requestID: "req-deleted")
        #expect(response.decision == .declined)
        #expect(response.tokenState == .deactivated)
        #expect(
            response.declineReason
                == "the token was deleted by the TSP (FRAUD_SUSPECTED) before its digitization was decided; add "
                + "the card again")
        #expect(second.issuer.state.withLock { $0.authorizations } == 0)
        let history = try await second.control.tokenHistory(.init(digitalCardID: id)).events
        #expect(!history.contains { $0.reason.contains("issuer approved") })
        // The token stays as its delete left it (version, who decided): the parties were told that version.
        #expect(try await issuerView.getIssuerTokens(.init()).tokens == deleted)
        #expect(deleted.map(\.stateVersion) == [2])
        // Answered for good: another retry gives the same answer, still without the issuer.
        #expect(try await second.digitize(eligibility, requestID: "req-deleted") == response)
        #expect(second.issuer.state.withLock { $0.authorizations } == 0)
    }

    /// A file where the keys directory should be is named with what to do (status 2), not reported as Foundation's
    /// `NSCocoaErrorDomain Code=516 "A file with the same name already exists."`.
    @Test func aFileInPlaceOfTheKeysDirectoryIsNamed() throws {
        let directory = try TSPHarness.temporaryDirectory()
        let keys = directory + "/keys"
        _ = FileManager.default.createFile(atPath: keys, contents: Data("not keys".utf8))
        let failure = try #require(throws: NodeError.self) {
            try TSPNode.services(
                dataDirectory: directory, issuers: IssuerDirectory(routes: [:], fallback: nil),
                logger: Logger(node: "tsp-node", sink: MemoryLogSink()))
        }
        #expect(failure.exitStatus == 2)
        #expect(
            failure.description
                == "\(keys) is a file, but the TSP keeps its keys in a directory by that name; move the file away "
                + "(if it is a backup of the keys, restore them into the directory)")
        #expect(throws: NodeError.self) { try TSPKeyFiles.loadKeyring(dataDirectory: directory) }
        #expect(throws: NodeError.self) { try TSPKeyFiles.loadAccessTokenKey(dataDirectory: directory) }
    }

    @Test func keysAreCreatedOncePrivateAndReused() async throws {
        let directory = try TSPHarness.temporaryDirectory()
        let first = try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        let second = try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        #expect(first.currentKid == second.currentKid)
        _ = try TSPKeyFiles.loadVault(dataDirectory: directory)
        for name in ["card-key-current.pem", "data-vault.key"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/keys/" + name)
            #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o077 } == 0, "\(name)")
        }
    }

    @Test func retiredKeysArePublishedAndStillDecrypt() async throws {
        let directory = try TSPHarness.temporaryDirectory()
        let retired = try RSAPrivateKey.generate()
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        try retired.write(toFile: directory + "/keys/card-key-retired-1.pem")
        let tsp = try TSPHarness.make(directory: directory)
        let keys = try await tsp.wallet.getEncryptionKeys(TspV1.GetEncryptionKeysRequest()).keys
        #expect(keys.map(\.publicKeyIdentifier) == [TSPHarness.tspKey.kid, retired.kid])
        #expect(keys.map(\.current) == [true, false])
        try await tsp.registerIssuer()
        let old = try TSPHarness.encrypted(TSPHarness.card(TSPHarness.visa), key: retired)
        #expect(try await tsp.checkEligibility(.encryptedCardData(old)).eligible)
    }

    @Test func cardNumbersAreStoredOnlySealed() async throws {
        let tsp = try TSPHarness.make()
        _ = try await tsp.digitize(try await tsp.eligibleVisa())
        let bytes =
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: tsp.directory + "/tsp.sqlite")))
            + ((try? [UInt8](Data(contentsOf: URL(fileURLWithPath: tsp.directory + "/tsp.sqlite-wal")))) ?? [])
        let pan = Array(TSPHarness.visa.utf8)
        let found =
            bytes.count >= pan.count
            && (0...(bytes.count - pan.count)).contains {
                bytes[$0..<($0 + pan.count)].elementsEqual(pan)
            }
        #expect(!found)
    }
}

/// A vault key that cannot open what the database holds — deleted, or replaced by another — stops the TSP at start
/// (exit status 2, the key file named), instead of failing every call on that data later.
@Suite struct VaultKeyCheckTests {
    static func digitizedCard() async throws -> TSPHarness {
        let tsp = try TSPHarness.make()
        _ = try await tsp.digitize(try await tsp.eligibleVisa(), requestID: "req-1")
        return tsp
    }

    static func refusal(directory: String) throws -> NodeError {
        try #require(throws: NodeError.self) { _ = try TSPHarness.make(directory: directory) }
    }

    @Test func aMissingKeyIsRefusedAndNotReplaced() async throws {
        let first = try await Self.digitizedCard()
        let keyFile = first.directory + "/keys/data-vault.key"
        try FileManager.default.removeItem(atPath: keyFile)
        let error = try Self.refusal(directory: first.directory)
        #expect(error.exitStatus == 2)
        #expect(error.description.contains("the vault key file \(keyFile) is missing"), "\(error)")
        #expect(error.description.contains("restore the original \(keyFile), or remove the data directory"))
        // The key made while loading is gone again: putting the original back is all it takes.
        #expect(!FileManager.default.fileExists(atPath: keyFile))
    }

    @Test func anotherKeyIsRefused() async throws {
        let first = try await Self.digitizedCard()
        let keyFile = first.directory + "/keys/data-vault.key"
        let original = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: keyFile))
        let error = try Self.refusal(directory: first.directory)
        #expect(error.exitStatus == 2)
        #expect(error.description.contains("the vault key file \(keyFile) is not the key the database"), "\(error)")
        #expect(error.description.contains("sealed data cannot be read without the original key"))

        try original.write(to: URL(fileURLWithPath: keyFile))
        let restored = try TSPHarness.make(directory: first.directory)
        #expect(try await restored.control.listTokens(TspV1.ListTokensRequest()).tokens.count == 1)
    }

    /// A key file the node cannot use at all (a wrong size, a directory in its place) is configuration too: status 2
    /// with the file named, where it was status 1 as if the disk had failed.
    @Test func aKeyFileThatCannotBeAKeyIsAConfigurationError() async throws {
        let first = try await Self.digitizedCard()
        let keyFile = first.directory + "/keys/data-vault.key"
        let original = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try Data(repeating: 7, count: 31).write(to: URL(fileURLWithPath: keyFile))
        let short = try Self.refusal(directory: first.directory)
        #expect(short.exitStatus == 2, "\(short)")
        #expect(short.description.contains(keyFile), "\(short)")
        try FileManager.default.removeItem(atPath: keyFile)
        try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: false)
        let directory = try Self.refusal(directory: first.directory)
        #expect(directory.exitStatus == 2, "\(directory)")
        #expect(directory.description.contains(keyFile), "\(directory)")
        try FileManager.default.removeItem(atPath: keyFile)
        try original.write(to: URL(fileURLWithPath: keyFile))
        #expect(FileManager.default.fileExists(atPath: keyFile))
    }

    /// A damaged check value is not a wrong key: with the key that opens the database's sealed data (or, for a
    /// database without any, with a value that is no check value at all) the refusal says the check value is
    /// damaged and points at a backup, not at removing the data directory. It said the key was wrong.
    @Test func aDamagedCheckValueIsToldApartFromAWrongKey() async throws {
        let first = try await Self.digitizedCard()
        let path = first.directory + "/tsp.sqlite"
        let database = try Database.open(path: path)
        let original = try #require(try database.queryOne("SELECT sealed FROM vault_key_check")?.blob(0))
        var flipped = original
        flipped[20] ^= 0x01
        for damaged: SQLValue in [.blob(Array(original.prefix(10))), .blob(flipped), .text("not a check value")] {
            try database.execute("UPDATE vault_key_check SET sealed = ?", [damaged])
            let error = try Self.refusal(directory: first.directory)
            #expect(error.exitStatus == 2, "\(error)")
            #expect(
                error.description.contains("the database \(path) has a damaged vault key check value ("), "\(error)")
            #expect(error.description.contains("restore the database from a backup"), "\(error)")
            #expect(!error.description.contains("remove the data directory"), "\(error)")
        }
        // With another key as well, the sealed data shows the key is wrong: that is what is reported.
        let keyFile = first.directory + "/keys/data-vault.key"
        let key = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try Data(repeating: 9, count: 32).write(to: URL(fileURLWithPath: keyFile))
        #expect(try Self.refusal(directory: first.directory).description.contains("is not the key the database"))
        try key.write(to: URL(fileURLWithPath: keyFile))

        try database.execute("UPDATE vault_key_check SET sealed = ?", [original])
        _ = try TSPHarness.make(directory: first.directory)

        // No sealed data to tell by: a value of the wrong size is damage, a well-formed one that does not open may
        // be either, and is reported as a wrong key, as before.
        let empty = try TSPHarness.make()
        let emptyPath = empty.directory + "/tsp.sqlite"
        let emptyDatabase = try Database.open(path: emptyPath)
        try emptyDatabase.execute("UPDATE vault_key_check SET sealed = ?", [Array(original.dropLast())])
        let short = try Self.refusal(directory: empty.directory)
        #expect(short.exitStatus == 2)
        #expect(short.description.contains("(it holds 54 bytes, not a 55-byte sealed check value)"), "\(short)")
        try emptyDatabase.execute("UPDATE vault_key_check SET sealed = ?", [flipped])
        #expect(try Self.refusal(directory: empty.directory).description.contains("is not the key the database"))
    }

    /// A table of the schema that is gone (here the check value's own) stops the node with status 2 and the table
    /// named, where SQLite's "no such table" came with the SQL text and status 1.
    @Test func aDatabaseMissingATableIsRefusedByName() async throws {
        let first = try await Self.digitizedCard()
        let path = first.directory + "/tsp.sqlite"
        try Database.open(path: path).execute("DROP TABLE vault_key_check")
        let error = try Self.refusal(directory: first.directory)
        #expect(error.exitStatus == 2, "\(error)")
        #expect(
            error.description.contains("the database \(path) lacks the table vault_key_check of its schema (version "),
            "\(error)")
        #expect(error.description.contains("restore it from a backup"), "\(error)")
        #expect(!error.description.contains("SQL"), "\(error)")
    }

    /// A database from before check values gets one at its next start, when its key opens its sealed records; with
    /// another key those records themselves give the mismatch away.
    @Test func aDatabaseWithoutACheckValueIsCheckedAgainstItsSealedData() async throws {
        let first = try await Self.digitizedCard()
        let store = try TSPStore.open(
            path: first.directory + "/tsp.sqlite", key: try TSPKeyFiles.loadVault(dataDirectory: first.directory))
        try store.database.execute("DELETE FROM vault_key_check")
        let keyFile = first.directory + "/keys/data-vault.key"
        let original = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        try Data(repeating: 9, count: 32).write(to: URL(fileURLWithPath: keyFile))
        let error = try Self.refusal(directory: first.directory)
        #expect(error.description.contains("is not the key the database"), "\(error)")
        #expect(try store.database.queryOne("SELECT COUNT(*) FROM vault_key_check")?.int(0) == 0)

        try original.write(to: URL(fileURLWithPath: keyFile))
        _ = try TSPHarness.make(directory: first.directory)
        #expect(try store.database.queryOne("SELECT COUNT(*) FROM vault_key_check")?.int(0) == 1)
    }
}
