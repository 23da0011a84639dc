import Foundation
import Testing

@testable import TokenetCard

@Suite struct DataVaultTests {
    static let vault = try! DataVault(key: [UInt8](repeating: 7, count: 32))

    @Test func roundTripAndLayout() throws {
        for plaintext in [[], Array("4111111111111111".utf8), [UInt8](repeating: 0xAB, count: 4096)] as [[UInt8]] {
            let record = try Self.vault.seal(plaintext, associatedData: Array("card-1".utf8))
            #expect(record.count == plaintext.count + DataVault.overhead)
            #expect(record[0] == 1)
            #expect(try Self.vault.open(record, associatedData: Array("card-1".utf8)) == plaintext)
        }
    }

    @Test func freshNoncePerRecord() throws {
        let a = try Self.vault.seal(Array("same".utf8))
        let b = try Self.vault.seal(Array("same".utf8))
        #expect(a[1..<13] != b[1..<13])
        #expect(a != b)
    }

    @Test func panRecordsAreBoundToTheirRecordID() throws {
        let pan = try PAN("4111111111111111")
        let record = try Self.vault.seal(pan, recordID: "card-1")
        #expect(!String(decoding: record, as: UTF8.self).contains("4111"))
        #expect(try Self.vault.openPAN(record, recordID: "card-1") == pan)
        do {
            _ = try Self.vault.openPAN(record, recordID: "card-2")
            Issue.record("opened under another record id")
        } catch {
            #expect(error.code == .authenticationFailed)
        }
    }

    /// Flipping any bit after the version byte is detected; changing the version byte is reported as a format error.
    @Test func everyAlteredByteIsDetected() throws {
        let record = try Self.vault.seal(Array("5555555555554444".utf8), associatedData: Array("id".utf8))
        for index in record.indices {
            var tampered = record
            tampered[index] ^= 0x01
            do {
                _ = try Self.vault.open(tampered, associatedData: Array("id".utf8))
                Issue.record("byte \(index) altered without detection")
            } catch {
                #expect(error.code == (index == 0 ? .malformedRecord : .authenticationFailed), "byte \(index)")
            }
        }
    }

    @Test func wrongKeyAssociatedDataAndShortRecords() throws {
        let record = try Self.vault.seal(Array("secret".utf8), associatedData: Array("a".utf8))
        let other = try DataVault(key: [UInt8](repeating: 8, count: 32))
        #expect(throws: CardError.self) { try other.open(record, associatedData: Array("a".utf8)) }
        #expect(throws: CardError.self) { try Self.vault.open(record) }
        for length in [0, 1, 28] {
            do {
                _ = try Self.vault.open(Array(record.prefix(length)))
                Issue.record("opened a \(length)-byte record")
            } catch {
                #expect(error.code == .malformedRecord)
                #expect(error.message.contains("at least 29"))
            }
        }
        var truncated = record
        truncated.removeLast()
        #expect(throws: CardError.self) { try Self.vault.open(truncated, associatedData: Array("a".utf8)) }
    }

    @Test func keySizeIsChecked() {
        for size in [0, 16, 31, 33] {
            #expect(throws: CardError.self) { try DataVault(key: [UInt8](repeating: 1, count: size)) }
        }
    }

    @Test func keyFileIsCreatedWithOwnerOnlyPermissionsAndReused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("vault.key").path
        let first = try DataVault(keyFile: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(attributes[.size] as? Int == 32)
        let record = try first.seal(Array("persisted".utf8))
        let second = try DataVault(keyFile: path)
        #expect(try second.open(record) == Array("persisted".utf8))
    }

    /// Whoever can change the directory that holds a key file, or owns the file, can put their own key in its place
    /// whatever the file's mode: such a key was taken without a word (another user's card-data key was published as
    /// the TSP's current one).
    @Test func aKeyOthersCanReplaceIsRefused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = directory.appendingPathComponent("keys").path
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: false)
        let path = keys + "/vault.key"
        _ = try DataVault(keyFile: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: keys)
        let refused = Self.refusal(path)
        #expect(refused?.code == .invalidKey)
        #expect(refused?.message.contains("is in a directory other users can change (\(keys), mode 777)") == true)
        #expect(refused?.message.contains("run chmod go-w \(keys)") == true)
        // A key made there is refused at once too, not only when it is read at the next start.
        #expect(throws: CardError.self) { try DataVault(keyFile: keys + "/fresh.key") }
        #expect(throws: CardError.self) { try SecretKeyFile.loadOrCreate(path: keys + "/fresh-secret.key") }
        // The sticky bit (as /tmp has) keeps others from replacing a file they do not own.
        try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: keys)
        #expect(throws: Never.self) { try DataVault(keyFile: path) }
        // A group that may write the directory can replace the key too.
        try FileManager.default.setAttributes([.posixPermissions: 0o775], ofItemAtPath: keys)
        #expect(throws: CardError.self) { try DataVault(keyFile: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: keys)
        #expect(throws: Never.self) { try DataVault(keyFile: path) }
        // A directory further up counts as much: whoever can change it can rename the key's own directory.
        let nested = keys + "/inner"
        try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: false)
        let deeper = nested + "/vault.key"
        _ = try DataVault(keyFile: deeper)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: keys)
        #expect(
            Self.refusal(deeper)?.message.contains("is in a directory other users can change (\(keys), mode 777)")
                == true)
        // So does where a symbolic link leads.
        let safe = directory.appendingPathComponent("safe").path
        try FileManager.default.createDirectory(atPath: safe, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: safe + "/link.key", withDestinationPath: path)
        #expect(throws: CardError.self) { try DataVault(keyFile: safe + "/link.key") }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: keys)
        #expect(throws: Never.self) { try DataVault(keyFile: safe + "/link.key") }
        // And where the link itself sits: whoever can change that directory can replace the link.
        let open = directory.appendingPathComponent("open").path
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open)
        try FileManager.default.createSymbolicLink(atPath: open + "/link.key", withDestinationPath: path)
        #expect(
            Self.refusal(open + "/link.key")?.message.contains(
                "is in a directory other users can change (\(open), mode 777)") == true)
    }

    /// A key file under another user's directory, or owned by another user, is refused: that user can replace it.
    @Test(.enabled(if: geteuid() == 0, "only root can hand a file over to another user"))
    func aKeyOfAnotherUserOrInTheirDirectoryIsRefused() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = directory.appendingPathComponent("keys").path
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: keys)
        let path = keys + "/vault.key"
        _ = try DataVault(keyFile: path)
        let nested = keys + "/inner"
        try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: nested)
        let deeper = nested + "/vault.key"
        _ = try DataVault(keyFile: deeper)
        #expect(chown(nested, 65534, 65534) == 0)
        #expect(
            Self.refusal(deeper)?.message.contains("is in a directory another user owns (\(nested), uid 65534)")
                == true)
        #expect(chown(path, 65534, 65534) == 0)
        #expect(Self.refusal(path)?.message.contains("is owned by another user (uid 65534)") == true)
    }

    /// Why a vault with the key file at `path` is refused; nil when it opens.
    static func refusal(_ path: String) -> CardError? {
        do {
            _ = try DataVault(keyFile: path)
            return nil
        } catch {
            return error
        }
    }

    @Test func badKeyFilesAreRefusedWithInstructions() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("vault.key").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: 32))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        do {
            _ = try DataVault(keyFile: path)
            Issue.record("accepted a world-readable key file")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(error.message.contains("chmod 600"))
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(throws: Never.self) { try DataVault(keyFile: path) }
        try Data(repeating: 1, count: 31).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        do {
            _ = try DataVault(keyFile: path)
            Issue.record("accepted a 31-byte key file")
        } catch {
            #expect(error.message.contains("31 bytes"))
        }
        do {
            _ = try DataVault(keyFile: directory.appendingPathComponent("missing/vault.key").path)
            Issue.record("created a key in a missing directory")
        } catch {
            #expect(error.code == .io)
        }
    }
}
