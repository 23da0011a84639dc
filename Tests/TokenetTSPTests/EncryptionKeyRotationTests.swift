import Foundation
import Testing
import TokenetCard
import TokenetNode
import TokenetRPC
import TokenetTransport
import TokenetWire

@testable import TokenetTSP

/// The operator's rotation of the TSP's card-data key (`TspControl.RotateEncryptionKey`) and the forgetting of a
/// retired one (`ForgetEncryptionKey`): what the TSP publishes, what it still decrypts, and what its data directory
/// keeps for the next start.
@Suite struct EncryptionKeyRotationTests {
    /// Card data encrypted to a published key, as a wallet makes it.
    static func encrypted(to published: TspV1.EncryptionKey) throws -> CardV1.EncryptedCardData {
        let key = try RSAPublicKey(pem: published.publicKeyPem)
        return CardV1.EncryptedCardData(
            jwe: try JWE.encrypt(TSPHarness.card(TSPHarness.visa), to: key, kid: published.publicKeyIdentifier),
            publicKeyIdentifier: published.publicKeyIdentifier)
    }

    static func retiredFiles(_ tsp: TSPHarness) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: tsp.directory + "/keys")
            .filter { $0.hasPrefix("card-key-retired-") }.sorted()
    }

    @Test func aRotatedKeyIsPublishedAndTheRetiredOneStillDecrypts() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let before = try await tsp.wallet.getEncryptionKeys(.init()).keys
        let rotated = try await tsp.control.rotateEncryptionKey(.init())
        #expect(rotated.retiredKeyIdentifier == TSPHarness.tspKey.kid)
        let after = try await tsp.wallet.getEncryptionKeys(.init()).keys
        #expect(after == rotated.keys)
        #expect(after.map(\.current) == [true, false])
        #expect(after[1].publicKeyIdentifier == before[0].publicKeyIdentifier)
        #expect(after[1].publicKeyPem == before[0].publicKeyPem)
        #expect(after[0].publicKeyIdentifier != TSPHarness.tspKey.kid)
        // Card data a wallet encrypted a moment before the rotation, and after it.
        #expect(try await tsp.checkEligibility(.encryptedCardData(try Self.encrypted(to: before[0]))).eligible)
        #expect(try await tsp.checkEligibility(.encryptedCardData(try Self.encrypted(to: after[0]))).eligible)
        #expect(try Self.retiredFiles(tsp).count == 1)
        // The kid as the log shows it: about one key in a hundred has 13 or more decimal digits in a row in its hex
        // that pass the Luhn check, which the log masks as it masks a card number written into an identifier.
        #expect(
            tsp.logs.lines.contains {
                $0.contains("card-data key rotated") && $0.contains(maskPAN(after[0].publicKeyIdentifier))
            }, "\(tsp.logs.lines)")
    }

    @Test func aForgottenKeyNoLongerDecryptsAndItsFileIsGone() async throws {
        let tsp = try TSPHarness.make()
        try await tsp.registerIssuer()
        let old = try #require(try await tsp.wallet.getEncryptionKeys(.init()).keys.first)
        let beforeForgetting = try Self.encrypted(to: old)
        let current = try #require(try await tsp.control.rotateEncryptionKey(.init()).keys.first)
        let forgotten = try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: old.publicKeyIdentifier))
        #expect(forgotten.keys == [current])
        #expect(try await tsp.wallet.getEncryptionKeys(.init()).keys == [current])
        #expect(try Self.retiredFiles(tsp).isEmpty)
        await expectRPCError(.invalidArgument, "no decryption key has kid") {
            try await tsp.checkEligibility(.encryptedCardData(beforeForgetting))
        }
        #expect(try await tsp.checkEligibility(.encryptedCardData(try Self.encrypted(to: current))).eligible)
        // Forgotten already, the current key, no key at all: each refused with what to do, nothing changed.
        await expectRPCError(.notFound, "no card-data key") {
            try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: old.publicKeyIdentifier))
        }
        await expectRPCError(.failedPrecondition, "rotate the key first") {
            try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: current.publicKeyIdentifier))
        }
        await expectRPCError(.invalidArgument, "public_key_identifier is required") {
            try await tsp.control.forgetEncryptionKey(.init())
        }
        #expect(try await tsp.wallet.getEncryptionKeys(.init()).keys == [current])
    }

    @Test func theKeysOfARotationAreKeptAcrossARestart() async throws {
        let tsp = try TSPHarness.make()
        _ = try await tsp.control.rotateEncryptionKey(.init())
        let kept = try await tsp.control.rotateEncryptionKey(.init()).keys
        _ = try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: kept[2].publicKeyIdentifier))
        let restarted = try TSPHarness.make(directory: tsp.directory)
        #expect(try await restarted.wallet.getEncryptionKeys(.init()).keys == Array(kept.prefix(2)))
        for name in try Self.retiredFiles(restarted) + ["card-key-current.pem"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: tsp.directory + "/keys/" + name)
            #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o077 } == 0, "\(name)")
        }
    }

    /// Rotations at once take turns: each retires the key the one before it made, and none is lost.
    @Test func rotationsAtOnceEachRetireADifferentKey() async throws {
        let tsp = try TSPHarness.make()
        let retired = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 {
                group.addTask { try await tsp.control.rotateEncryptionKey(.init()).retiredKeyIdentifier }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        let keys = try await tsp.wallet.getEncryptionKeys(.init()).keys
        #expect(Set(retired).count == 5)
        #expect(Set(keys.dropFirst().map(\.publicKeyIdentifier)) == Set(retired))
        #expect(retired.contains(TSPHarness.tspKey.kid) && !retired.contains(keys[0].publicKeyIdentifier))
        #expect(try Self.retiredFiles(tsp).count == 5)
        #expect(try await TSPHarness.make(directory: tsp.directory).wallet.getEncryptionKeys(.init()).keys == keys)
    }

    @Test func onlyTheOperatorChangesKeys() async throws {
        let tsp = try TSPHarness.make()
        let asWallet = TspV1.TspControl.Client(
            TSPHarness.connect(tsp.router, as: PeerIdentity(role: .wallet, nodeID: "wallet-1")))
        await expectRPCError(.permissionDenied, "allowed: operator") {
            try await asWallet.rotateEncryptionKey(.init())
        }
        await expectRPCError(.permissionDenied, "allowed: operator") {
            try await asWallet.forgetEncryptionKey(.init(publicKeyIdentifier: TSPHarness.tspKey.kid))
        }
        #expect(
            try await tsp.wallet.getEncryptionKeys(.init()).keys.map(\.publicKeyIdentifier) == [TSPHarness.tspKey.kid])
    }

    /// A key file the TSP cannot replace (here a directory in its place, which even root cannot rename a file
    /// onto): the rotation is UNAVAILABLE with where to look, and the keys in use stay as they were.
    @Test func aKeyFileThatCannotBeReplacedLeavesTheKeysAsTheyWere() async throws {
        let tsp = try TSPHarness.make()
        let current = tsp.directory + "/keys/card-key-current.pem"
        try FileManager.default.removeItem(atPath: current)
        try FileManager.default.createDirectory(atPath: current + "/in-the-way", withIntermediateDirectories: true)
        await expectRPCError(.unavailable, "could not write or delete its key files") {
            try await tsp.control.rotateEncryptionKey(.init())
        }
        let keys = try await tsp.wallet.getEncryptionKeys(.init()).keys
        #expect(keys.map(\.publicKeyIdentifier) == [TSPHarness.tspKey.kid])
        // The retired copy the rotation wrote first is taken back: the files are as they were.
        #expect(try Self.retiredFiles(tsp).isEmpty)
        #expect(tsp.logs.lines.contains { $0.contains("RotateEncryptionKey failed") })
    }

    /// A retired key's file damaged since the start (named for the key, no longer a key) is deleted by forgetting
    /// the key, where it was left and stopped the next start; a key whose file is gone is not said forgotten.
    @Test func forgettingAKeyWhoseFileChangedSaysWhatWasDone() async throws {
        let tsp = try TSPHarness.make()
        _ = try await tsp.control.rotateEncryptionKey(.init())
        let second = try await tsp.control.rotateEncryptionKey(.init())
        let files = try Self.retiredFiles(tsp)
        #expect(files.count == 2)
        let keys = tsp.directory + "/keys/"
        try Data("junk\n".utf8).write(to: URL(fileURLWithPath: keys + files[0]))
        _ = try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: TSPHarness.tspKey.kid))
        #expect(try Self.retiredFiles(tsp) == [files[1]])
        try FileManager.default.removeItem(atPath: keys + files[1])
        await expectRPCError(.failedPrecondition, "so nothing was deleted and the key still decrypts") {
            try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: second.retiredKeyIdentifier))
        }
        #expect(try await tsp.wallet.getEncryptionKeys(.init()).keys.count == 2)
    }

    /// NOT_FOUND names the retired keys newest first, as `GetEncryptionKeys` lists them, five at most.
    @Test func anUnknownKeyIsAnsweredWithTheNewestRetiredKeys() async throws {
        let tsp = try TSPHarness.make()
        var retired: [String] = []
        for _ in 0..<7 { retired.append(try await tsp.control.rotateEncryptionKey(.init()).retiredKeyIdentifier) }
        let newest = retired.reversed().prefix(5).joined(separator: ", ")
        await expectRPCError(.notFound, "its retired keys, newest first: \(newest) and 2 more (tokenet tsp keys") {
            try await tsp.control.forgetEncryptionKey(.init(publicKeyIdentifier: "deadbeef"))
        }
        #expect(ControlService.retiredKeysText(newestFirst: []) == "it has no retired key, only the current one")
    }

    /// What a crash left behind: a retired copy of the current key is read as the current key alone, a temporary
    /// file of a retired key's write is removed, and a damaged retired key stops the start with what to do.
    @Test func aStartReadsWhatAnInterruptedRotationLeft() throws {
        let directory = try TSPHarness.temporaryDirectory()
        let keys = directory + "/keys/"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try TSPHarness.tspKey.write(toFile: keys + "card-key-current.pem")
        try TSPHarness.tspKey.write(
            toFile: keys + TSPKeyFiles.retiredFileName(kid: TSPHarness.tspKey.kid, atMs: 1_796_537_418_622))
        let leftover = keys + TSPKeyFiles.retiredFileName(kid: "ab", atMs: 1) + ".tmp.4242"
        try TSPHarness.tspKey.write(toFile: leftover)
        let keyring = try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        #expect(keyring.currentKid == TSPHarness.tspKey.kid && keyring.retiredKids.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: leftover))

        try Data("junk\n".utf8).write(to: URL(fileURLWithPath: keys + "card-key-retired-1.pem"))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keys + "card-key-retired-1.pem")
        #expect {
            try TSPKeyFiles.loadKeyring(dataDirectory: directory)
        } throws: {
            "\($0)".contains("card-key-retired-1.pem (5 bytes)")
                && "\($0)".contains("restore this retired card-data key from a backup, or remove the file")
        }
    }

    @Test func retiredFileNamesSortOldestFirst() {
        let names = [1, 999, 1_796_537_418_622].map {
            TSPKeyFiles.retiredFileName(kid: "ab" + String(repeating: "c", count: 62), atMs: $0)
        }
        #expect(names == names.sorted())
        #expect(names[2] == "card-key-retired-1796537418622-abcccccccccccccc.pem")
        #expect(names.map(TSPKeyFiles.retiredTime) == [1, 999, 1_796_537_418_622])
        #expect(TSPKeyFiles.retiredTime("card-key-retired-1.pem") == nil)
    }
}
