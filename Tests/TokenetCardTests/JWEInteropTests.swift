import Foundation
import Testing

@testable import TokenetCard

/// Interoperability with independent implementations: Python's `cryptography` package (Debian
/// `python3-cryptography`, PyPI `cryptography`) and the `openssl` command. Both must be installed; the tests fail
/// with instructions when they are not, rather than passing without checking anything.
@Suite struct JWEInteropTests {
    /// A small JWE implementation written directly against `cryptography`, sharing no code with TokenetCard.
    static let script = #"""
        import base64, hashlib, json, os, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        def b64d(text):
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

        def b64e(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

        OAEP = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
        mode = sys.argv[1]
        if mode == "decrypt":
            key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), password=None)
            compact = sys.stdin.read().strip()
            header_b64, encrypted_key, iv, ciphertext, tag = compact.split(".")
            cek = key.decrypt(b64d(encrypted_key), OAEP)
            plaintext = AESGCM(cek).decrypt(b64d(iv), b64d(ciphertext) + b64d(tag), header_b64.encode("ascii"))
            print(json.dumps({"header": b64d(header_b64).decode("utf-8"), "plaintext": plaintext.hex()}))
        elif mode == "split":
            parts = sys.stdin.read().strip().split(".")
            open(sys.argv[2], "wb").write(b64d(parts[1]))
        elif mode == "content":
            cek = open(sys.argv[2], "rb").read()
            header_b64, _, iv, ciphertext, tag = sys.stdin.read().strip().split(".")
            plaintext = AESGCM(cek).decrypt(b64d(iv), b64d(ciphertext) + b64d(tag), header_b64.encode("ascii"))
            sys.stdout.write(plaintext.hex())
        elif mode == "encrypt":
            public_key = serialization.load_pem_public_key(open(sys.argv[2], "rb").read())
            kid = sys.argv[3]
            plaintext = sys.stdin.buffer.read()
            header = b64e(json.dumps({"alg": "RSA-OAEP-256", "enc": "A256GCM", "kid": kid}).encode("utf-8"))
            cek = AESGCM.generate_key(bit_length=256)
            iv = os.urandom(12)
            sealed = AESGCM(cek).encrypt(iv, plaintext, header.encode("ascii"))
            encrypted_key = public_key.encrypt(cek, OAEP)
            print(".".join([header, b64e(encrypted_key), b64e(iv), b64e(sealed[:-16]), b64e(sealed[-16:])]))
        elif mode == "kid":
            public_key = serialization.load_pem_public_key(open(sys.argv[2], "rb").read())
            der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            print(hashlib.sha256(der).hexdigest())
        """#

    /// A scratch directory holding the script, and the key files the tools read.
    struct Workspace {
        let directory: URL

        init() throws {
            directory = try Fixtures.temporaryDirectory()
            try Data(JWEInteropTests.script.utf8).write(to: directory.appendingPathComponent("jwe.py"))
            let probe = try python(["-c", "import cryptography.hazmat.primitives.ciphers.aead"])
            let hint = "python3 with the cryptography package is required (apt-get install python3-cryptography)"
            try #require(probe.status == 0, "\(hint): \(probe.stderr)")
        }

        func write(_ text: String, to name: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }

        /// Debian's interpreter, which is where Tools/setup installs python3-cryptography; another `python3` earlier
        /// on PATH (a pyenv, a virtualenv) may not have the package.
        func python(_ arguments: [String], stdin: Data = Data()) throws -> ExternalCommand.Result {
            let interpreter =
                FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
            return try ExternalCommand.run([interpreter] + arguments, stdin: stdin, in: directory)
        }

        func openssl(_ arguments: [String]) throws -> ExternalCommand.Result {
            try ExternalCommand.run(["openssl"] + arguments, in: directory)
        }

        func remove() {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static let card = CardData(
        accountNumber: "5555555555554444",
        expirationDate: .init(month: "03", year: "2029"),
        cvv2: "321",
        name: "Grace Hopper"
    )

    /// Our JWE, decrypted entirely by Python.
    @Test func pythonDecryptsOurJWE() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let keyPath = try workspace.write(try Fixtures.key.pem(), to: "key.pem")
        let payload = try Self.card.jsonBytes()
        let compact = try JWE.encrypt(payload, to: Fixtures.key.publicKey, kid: Fixtures.key.kid)

        let result = try workspace.python(["jwe.py", "decrypt", keyPath], stdin: Data(compact.utf8))
        try #require(result.status == 0, "python failed: \(result.stderr)")
        let output = try JSONSerialization.jsonObject(with: result.stdout) as! [String: String]
        #expect(output["header"] == #"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"\#(Fixtures.key.kid)"}"#)
        #expect(output["plaintext"] == payload.map { String(format: "%02x", $0) }.joined())
    }

    /// Our JWE, with the CEK unwrapped by `openssl pkeyutl` and the content decrypted by Python's AES-GCM.
    @Test func opensslUnwrapsOurContentKey() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let keyPath = try workspace.write(try Fixtures.key.pem(), to: "key.pem")
        let payload = try Self.card.jsonBytes()
        let compact = try JWE.encrypt(payload, to: Fixtures.key.publicKey)

        let split = try workspace.python(["jwe.py", "split", "ek.bin"], stdin: Data(compact.utf8))
        try #require(split.status == 0, "python failed: \(split.stderr)")
        let unwrap = try workspace.openssl([
            "pkeyutl", "-decrypt", "-inkey", keyPath, "-in", "ek.bin", "-out", "cek.bin",
            "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256",
        ])
        try #require(unwrap.status == 0, "openssl pkeyutl failed: \(unwrap.stderr)")
        let cek = try Data(contentsOf: workspace.directory.appendingPathComponent("cek.bin"))
        #expect(cek.count == 32)

        let content = try workspace.python(["jwe.py", "content", "cek.bin"], stdin: Data(compact.utf8))
        try #require(content.status == 0, "python failed: \(content.stderr)")
        #expect(content.text == payload.map { String(format: "%02x", $0) }.joined())
    }

    /// A JWE made by Python (header with spaces, its own CEK and IV) decrypts with ours.
    @Test func weDecryptPythonJWE() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let keyring = TSPKeyring(current: Fixtures.key, retired: [Fixtures.otherKey])
        for key in [Fixtures.key, Fixtures.otherKey] {
            let publicPath = try workspace.write(try key.publicKey.pem(), to: "pub-\(key.kid).pem")
            let result = try workspace.python(
                ["jwe.py", "encrypt", publicPath, key.kid],
                stdin: Data(try Self.card.jsonBytes())
            )
            try #require(result.status == 0, "python failed: \(result.stderr)")
            let (kid, card) = try JWE.decryptCardData(result.text, with: keyring)
            #expect(kid == key.kid)
            #expect(card == Self.card)
        }
    }

    /// A key generated by `openssl genpkey` loads, and a Python JWE to it decrypts; its kid matches the
    /// fingerprint computed by `openssl dgst` over the DER SubjectPublicKeyInfo.
    @Test func opensslKeyAndFingerprint() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let generate = try workspace.openssl([
            "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "cli.pem",
        ])
        try #require(generate.status == 0, "openssl genpkey failed: \(generate.stderr)")
        let export = try workspace.openssl(["pkey", "-in", "cli.pem", "-pubout", "-out", "cli.pub"])
        try #require(export.status == 0, "openssl pkey failed: \(export.stderr)")
        let der = try workspace.openssl(["pkey", "-pubin", "-in", "cli.pub", "-outform", "DER", "-out", "cli.der"])
        try #require(der.status == 0, "openssl pkey failed: \(der.stderr)")
        let digest = try workspace.openssl(["dgst", "-sha256", "-r", "cli.der"])
        try #require(digest.status == 0, "openssl dgst failed: \(digest.stderr)")
        let fingerprint = String(digest.text.prefix(64))

        let key = try RSAPrivateKey(contentsOfFile: workspace.directory.appendingPathComponent("cli.pem").path)
        #expect(key.kid == fingerprint)
        let pythonKid = try workspace.python(["jwe.py", "kid", "cli.pub"])
        #expect(pythonKid.text == fingerprint)

        let result = try workspace.python(["jwe.py", "encrypt", "cli.pub", fingerprint], stdin: Data("hi".utf8))
        try #require(result.status == 0, "python failed: \(result.stderr)")
        #expect(try JWE.decrypt(result.text, with: key) == Array("hi".utf8))
    }
}
