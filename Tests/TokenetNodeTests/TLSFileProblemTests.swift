import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetTransport
import TokenetWire

/// TLS files that exist but cannot serve as what their option names (a device, an empty file, a certificate given as
/// the key, a damaged PEM block) are refused before connecting, with a message that names the option, the file,
/// what is wrong with it and what to give instead, and without OpenSSL's error codes.
@Suite struct TLSFileProblemTests {
    static let garbageKey = "-----BEGIN PRIVATE KEY-----\nthis is not base64!\n-----END PRIVATE KEY-----\n"
    static let encryptedKey =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHzBJBgkqhkiG9w0BBQ0w\n-----END ENCRYPTED PRIVATE KEY-----\n"
    static let garbageCertificate = "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n"

    /// Which option gets the bad file (0 --cacert, 1 --cert, 2 --key), what it holds (a text written to a file, or
    /// the path of an existing file when it starts with "/" or "pki:"), and the message expected after its name.
    static let cases: [(Int, String, String)] = [
        (2, "/dev/null", "is a device, not a file; give the PEM file of the private key"),
        (2, "", "is empty; give the PEM file of the private key"),
        (2, "pki:operator.pem", "holds a certificate, not a private key; give the key file (BEGIN PRIVATE KEY)"),
        (2, "hello\n", "is not a PEM file (it has no '-----BEGIN' line); give the PEM file of the private key"),
        (2, encryptedKey, "is encrypted with a passphrase, which Tokenet does not ask for"),
        (1, "pki:operator.key", "holds a private key, not a certificate; give the PEM file of the certificate"),
        (1, "/dev/zero", "is a device, not a file; give the PEM file of the certificate"),
        (0, " \n", "is empty; give the PEM file of the CA certificates"),
    ]

    @Test(arguments: cases)
    func anUnusableTLSFileIsNamedWithWhatToGive(flag: Int, content: String, message: String) throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        var files = [pki.path("ca.pem"), pki.path("operator.pem"), pki.path("operator.key")]
        files[flag] = try Self.file(content, in: directory)
        let name = ["--cacert", "--cert", "--key"][flag]
        let variable = ["TOKENET_CACERT", "TOKENET_CERT", "TOKENET_KEY"][flag]
        let result = try runTokenet(
            ["list", "127.0.0.1:1", "--cacert", files[0], "--cert", files[1], "--key", files[2]])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("tokenet: \(name) \(files[flag]) (given by \(name) or \(variable)) \(message)"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("error:"), "\(result.stderr)")
    }

    /// A file is named as given, also when its path holds a run of digits as long as a card number's (a UUID's
    /// `9-0017-4807-9503`): the name is what to act on, and masking it as a card number garbled it.
    @Test func aPathWithALongRunOfDigitsIsNamedAsGiven() throws {
        let pki = DevelopmentPKI.shared
        let missing = "/nonexistent/tokenet-A2DB9CF9-0017-4807-9503-FE0026A17086/ca.pem"
        let result = try runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", missing, "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: cannot read --cacert \(missing) (given by --cacert or TOKENET_CACERT): "
                    + "No such file or directory"
            ),
            "\(result.stderr)")
    }

    /// A file whose PEM block is damaged passes every look from outside; OpenSSL's refusal to read it is told in
    /// words, naming the option and the file, without its error codes.
    @Test(arguments: [(2, garbageKey, "private key"), (1, garbageCertificate, "certificate")])
    func aDamagedPEMBlockIsNamed(flag: Int, content: String, kind: String) throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        var files = [pki.path("ca.pem"), pki.path("operator.pem"), pki.path("operator.key")]
        files[flag] = try Self.file(content, in: directory)
        let result = try runTokenet(
            ["list", "127.0.0.1:1", "--cacert", files[0], "--cert", files[1], "--key", files[2]])
        #expect(result.status == 1, "\(result.stderr)")
        let name = ["--cacert", "--cert", "--key"][flag]
        let variable = ["TOKENET_CACERT", "TOKENET_CERT", "TOKENET_KEY"][flag]
        #expect(
            result.stderr.hasPrefix(
                "tokenet: \(name) \(files[flag]) (given by \(name) or \(variable)) cannot be read as a \(kind)"),
            "\(result.stderr)")
        #expect(result.stderr.contains("its PEM block is damaged or cut short"), "\(result.stderr)")
        #expect(!result.stderr.contains("error:"), "\(result.stderr)")
    }

    /// A key through a pipe (`--key /dev/stdin` fed by `|`, as `--key <(vault read …)` gives one) is read once, by
    /// the CLI, and loaded from what came: the command gets past its TLS files to the node it cannot reach.
    @Test func aKeyThroughAPipeIsRead() throws {
        let pki = DevelopmentPKI.shared
        let result = try runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                "/dev/stdin",
            ],
            standardInput: try Self.pipe(holding: try Data(contentsOf: URL(fileURLWithPath: pki.path("operator.key")))))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: cannot connect to 127.0.0.1:1: "), "\(result.stderr)")
    }

    /// A key read from a pipe serves the handshake with a node over mutual TLS as the key's file does: the node
    /// accepts the operator it proves and lists its services.
    @Test(.timeLimit(.minutes(3))) func aNodeIsListedWithTheKeyThroughAPipe() async throws {
        let pki = DevelopmentPKI.shared
        var router = RPCRouter()
        router.unary(HealthV1.Health.check) { (_, _) async throws in HealthV1.HealthCheckResponse() }
        ReflectionService(router: router).register(on: &router)
        let key = try Self.pipe(holding: try Data(contentsOf: URL(fileURLWithPath: pki.path("operator.key"))))
        let result = try await runTokenet(servedOverTLSBy: router, standardInput: key) {
            [
                "list", $0, "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", "/dev/stdin",
                "--deadline", "20s",
            ]
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("tokenet.health.v1.Health"), "\(result.stdout)")
    }

    /// What a pipe holds is checked as a file's text is: an encrypted key through a pipe is named as one, with the
    /// command to decrypt it naming a placeholder (the pipe's name is gone once read).
    @Test func anEncryptedKeyThroughAPipeIsNamed() throws {
        let pki = DevelopmentPKI.shared
        let result = try runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key",
                "/dev/stdin",
            ], standardInput: try Self.pipe(holding: Data(Self.encryptedKey.utf8)))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: --key /dev/stdin (given by --key or TOKENET_KEY) is encrypted with a passphrase, which "
                + "Tokenet does not ask for; give the key unencrypted (openssl pkey -in ENCRYPTED.key -out KEY.pem "
                + "writes it so)\n")
    }

    /// A FIFO that nobody writes to, as any of the three files, ends the command with its name after the CLI's 10 s
    /// wait for a writer; it used to wait forever in open(2). The FIFO is never opened for writing here: a command
    /// that waits for good is killed by `runTokenet` after a minute, and the test fails.
    @Test(arguments: 0..<3) func aFIFOWithoutAWriterIsRefusedWithinTheWait(flag: Int) async throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        var files = [pki.path("ca.pem"), pki.path("operator.pem"), pki.path("operator.key")]
        files[flag] = directory.path("identity.fifo")
        #expect(mkfifo(files[flag], 0o600) == 0)
        let name = ["--cacert", "--cert", "--key"][flag]
        // Timed on the thread that runs the command: a wait for the test runner's threads is not the command's.
        let arguments = ["list", "127.0.0.1:1", "--cacert", files[0], "--cert", files[1], "--key", files[2]]
        let (result, took) = try await offThePool {
            let started = Date()
            let result = try runTokenet(arguments) as ProcessResult
            return (result, Date().timeIntervalSince(started))
        }
        #expect(took < 30, "the command waited for a writer")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: \(name) \(files[flag]) (given by \(name) or "), "\(result.stderr)")
        #expect(result.stderr.contains("is a pipe that nothing wrote to within 10 s"), "\(result.stderr)")
    }

    /// The read end of a pipe that holds `data`, its write end closed, as a shell's `|` gives a command once the
    /// command before it has ended.
    static func pipe(holding data: Data) throws -> FileHandle {
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(data)
        try pipe.fileHandleForWriting.close()
        return pipe.fileHandleForReading
    }

    /// A key file other users can read is refused with the chmod to run; a group may read one that root owns (as
    /// Debian's `ssl-cert` group reads /etc/ssl/private), never all users; a certificate may be read by anyone.
    @Test func aKeyOpenToOtherUsersIsRefused() throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        let key = directory.path("operator.key")
        let certificate = directory.path("operator.pem")
        try FileManager.default.copyItem(atPath: pki.path("operator.key"), toPath: key)
        try FileManager.default.copyItem(atPath: pki.path("operator.pem"), toPath: certificate)
        #expect(chmod(certificate, 0o644) == 0)
        let arguments = ["list", "127.0.0.1:1", "--cacert", pki.path("ca.pem"), "--cert", certificate, "--key", key]
        let read = "can be read by other users"
        let changed = "can be changed by other users"
        let readWhy = "whoever can read it can pose as its owner"
        let changedWhy = "whoever can change it can put their own key in its place"
        for (mode, how, why) in [(mode_t(0o644), read, readWhy), (0o604, read, readWhy), (0o620, changed, changedWhy)] {
            #expect(chmod(key, mode) == 0)
            let result = try runTokenet(arguments)
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix(
                    "tokenet: --key \(key) (given by --key or TOKENET_KEY) \(how) (mode \(String(mode, radix: 8))): "
                        + "\(why); run chmod 600 \(key)"),
                "\(result.stderr)")
        }
        // Execute bits give nobody the key.
        for mode: mode_t in [0o700, 0o611] {
            #expect(chmod(key, mode) == 0)
            #expect(TLSFileCheck.problem(with: key, holding: .privateKey) == nil, "\(String(mode, radix: 8))")
        }
        // A path the shell would split is quoted in the command to run.
        let spaced = directory.path("my key's.key")
        try FileManager.default.copyItem(atPath: pki.path("operator.key"), toPath: spaced)
        #expect(chmod(spaced, 0o644) == 0)
        let quoted = TLSFileCheck.problem(with: spaced, holding: .privateKey) ?? ""
        #expect(quoted.hasSuffix("run chmod 600 '\(directory.path("my key'\\''s.key"))'"), "\(quoted)")
        #expect(chmod(key, 0o640) == 0)
        let groupReadable = TLSFileCheck.problem(with: key, holding: .privateKey)
        #expect((groupReadable == nil) == (getuid() == 0), "\(groupReadable ?? "accepted")")
        #expect(chmod(key, 0o400) == 0)
        #expect(TLSFileCheck.problem(with: key, holding: .privateKey) == nil)
        // In a directory any user can change, anyone can put their own key in its place, whatever the key's mode.
        #expect(chmod(directory.url.path, 0o777) == 0)
        let replaceable = TLSFileCheck.problem(with: key, holding: .privateKey) ?? "accepted"
        #expect(
            replaceable.hasPrefix("is in a directory other users can change (\(directory.url.path), mode 777)"),
            "\(replaceable)")
        #expect(chmod(directory.url.path, 0o700) == 0)
        #expect(TLSFileCheck.problem(with: key, holding: .privateKey) == nil)
        // Another user's key: they can read it or change it, whatever its mode (only root can hand it over).
        if geteuid() == 0 {
            #expect(chown(key, 65534, 65534) == 0)
            let foreign = TLSFileCheck.problem(with: key, holding: .privateKey) ?? "accepted"
            #expect(foreign.hasPrefix("is owned by another user (uid 65534)"), "\(foreign)")
        }
    }

    /// A file of more than 1 MiB is no certificate or key: refused with its size, before OpenSSL reads it.
    @Test func aFileOverOneMebibyteIsRefused() throws {
        let directory = try TemporaryDirectory()
        let pki = DevelopmentPKI.shared
        let large = directory.path("large.pem")
        let certificate = try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
        let copies = 1024 * 1024 / certificate.utf8.count + 1
        try Data(String(repeating: certificate, count: copies).utf8).write(to: URL(fileURLWithPath: large))
        let size = try FileManager.default.attributesOfItem(atPath: large)[.size] as? Int ?? 0
        let result = try runTokenet(
            [
                "list", "127.0.0.1:1", "--cacert", large, "--cert", pki.path("operator.pem"), "--key",
                pki.path("operator.key"),
            ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: --cacert \(large) (given by --cacert or TOKENET_CACERT) holds \(size) bytes, more than the "
                    + "1 MiB a CA certificate file may hold"),
            "\(result.stderr)")
    }

    /// `content` as a file in `directory`, or the file it names ("/dev/null", "pki:operator.pem").
    static func file(_ content: String, in directory: TemporaryDirectory) throws -> String {
        if content.hasPrefix("/") { return content }
        if content.hasPrefix("pki:") { return DevelopmentPKI.shared.path(String(content.dropFirst(4))) }
        let path = directory.path("file.pem")
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        // Owner-only, as a key must be: what is wrong with the file is then its text alone.
        #expect(chmod(path, 0o600) == 0)
        return path
    }
}
