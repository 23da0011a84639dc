import Foundation
import Testing

@testable import TokenetCard

@Suite struct RSAKeyTests {
    @Test func generatedKeyProperties() {
        let key = Fixtures.key
        #expect(key.publicKey.bits == 2048)
        #expect(key.kid.count == 64)
        #expect(key.kid.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(key.kid != Fixtures.otherKey.kid)
        #expect(!"\(key)".contains("PRIVATE"))
    }

    @Test func pemRoundTrips() throws {
        let privatePEM = try Fixtures.key.pem()
        #expect(privatePEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try RSAPrivateKey(pem: privatePEM)
        #expect(reloaded.kid == Fixtures.key.kid)

        let publicPEM = try Fixtures.key.publicKey.pem()
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let publicKey = try RSAPublicKey(pem: publicPEM)
        #expect(publicKey.kid == Fixtures.key.kid)
        #expect(publicKey.derSubjectPublicKeyInfo == Fixtures.key.publicKey.derSubjectPublicKeyInfo)

        let compact = try JWE.encrypt(Array("x".utf8), to: publicKey)
        #expect(try JWE.decrypt(compact, with: reloaded) == Array("x".utf8))
    }

    /// A private key given where the public one goes is named as such, with what to do: it is exposed.
    @Test func aPrivateKeyGivenAsThePublicOneIsNamed() throws {
        #expect {
            try RSAPublicKey(pem: try Fixtures.key.pem())
        } throws: {
            ($0 as? CardError)?.message.hasPrefix(
                "the text is a private key, which must never be sent to another party: make a new key pair") == true
        }
    }

    @Test func writesKeyFileWithOwnerOnlyPermissions() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tsp.key").path
        try Fixtures.key.write(toFile: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try RSAPrivateKey(contentsOfFile: path).kid == Fixtures.key.kid)
    }

    /// A directory or a dangling link in a key file's place is said as such, with the system's reason: the
    /// directory was told to "run chmod 600", and the link read as a bare "cannot read".
    @Test func aKeyFileThatIsNoFileSaysWhy() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("card-key.pem").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder)
        #expect {
            try RSAPrivateKey(ownerOnlyFile: folder)
        } throws: {
            ($0 as? CardError)?.message == "the key file \(folder) is a directory, not a file"
        }
        let link = directory.appendingPathComponent("gone.pem").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/nonexistent/x.pem")
        #expect {
            try RSAPrivateKey(ownerOnlyFile: link)
        } throws: {
            ($0 as? CardError)?.message
                == "the private key file: cannot open \(link): No such file or directory (errno 2)"
        }
    }

    /// A key file other users can read is refused with what to run, as the vault key is; the owner's own loads.
    @Test func anOwnerOnlyKeyFileOthersCanReadIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("card-key-current.pem").path
        try Fixtures.key.write(toFile: path)
        #expect(try RSAPrivateKey(ownerOnlyFile: path).kid == Fixtures.key.kid)
        chmod(path, 0o644)
        let refusal = try #require(throws: CardError.self) { try RSAPrivateKey(ownerOnlyFile: path) }
        #expect(refusal.message == "the key file \(path) can be read by other users (mode 644); run chmod 600 \(path)")
        // Others who can only change it could put their own key in its place; execute bits give nobody the key.
        chmod(path, 0o620)
        let changeable = try #require(throws: CardError.self) { try RSAPrivateKey(ownerOnlyFile: path) }
        #expect(changeable.message.contains("can be changed by other users (mode 620)"), "\(changeable)")
        chmod(path, 0o711)
        #expect(try RSAPrivateKey(ownerOnlyFile: path).kid == Fixtures.key.kid)
        // A path the shell would split is quoted in the command to run.
        #expect(
            SecretFile.exposure(mode: 0o644, of: "d sp/k.pem", what: "the key file")?.hasSuffix("'d sp/k.pem'") == true)
    }

    @Test func badKeysGiveClearErrors() throws {
        #expect(throws: CardError.self) { try RSAPrivateKey(pem: "garbage") }
        do {
            _ = try RSAPublicKey(pem: try Fixtures.key.pem())
            Issue.record("a private key PEM loaded as a public key")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(error.message.contains("BEGIN PUBLIC KEY"))
        }
        do {
            _ = try RSAPrivateKey(contentsOfFile: "/nonexistent/tsp.key")
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.code == .io)
            #expect(error.message.contains("/nonexistent/tsp.key"))
        }
        #expect(throws: CardError.self) { try RSAPrivateKey.generate(bits: 1024) }
    }

    @Test func refusesNonRSAAndSmallKeys() throws {
        let workspace = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: workspace) }
        let cases: [([String], String)] = [
            (
                ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "k.pem"],
                "not an RSA key"
            ),
            (["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "k.pem"], "2048"),
        ]
        for (arguments, fragment) in cases {
            let result = try ExternalCommand.run(["openssl"] + arguments, in: workspace)
            try #require(result.status == 0, "openssl failed: \(result.stderr)")
            let pem = try String(contentsOf: workspace.appendingPathComponent("k.pem"), encoding: .utf8)
            do {
                _ = try RSAPrivateKey(pem: pem)
                Issue.record("accepted \(arguments)")
            } catch {
                #expect(error.code == .invalidKey)
                #expect(error.message.contains(fragment), "\(error.message)")
            }
        }
    }

    /// An encrypted PEM is refused instead of prompting for a passphrase on the terminal.
    @Test func encryptedPEMIsRefusedWithoutPrompting() throws {
        let workspace = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: workspace) }
        let plain = workspace.appendingPathComponent("plain.pem")
        try Data(try Fixtures.key.pem().utf8).write(to: plain)
        let result = try ExternalCommand.run(
            ["openssl", "pkey", "-in", "plain.pem", "-aes256", "-passout", "pass:secret", "-out", "enc.pem"],
            in: workspace
        )
        try #require(result.status == 0, "openssl failed: \(result.stderr)")
        let pem = try String(contentsOf: workspace.appendingPathComponent("enc.pem"), encoding: .utf8)
        do {
            _ = try RSAPrivateKey(pem: pem)
            Issue.record("an encrypted key loaded without a passphrase")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.details.isEmpty)
        }
    }
}
