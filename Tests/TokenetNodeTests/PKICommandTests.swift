import Foundation
import Testing
import TokenetTestSupport
import TokenetTransport

/// `tokenet pki init DIR`: the development PKI the nodes and the CLI present, made by Tools/gen-certs.
@Suite struct PKICommandTests {
    @Test func initMakesTheCAAndEveryRolesCertificateAndKeepsThemWhenRunAgain() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        let made = try await runTokenet(["pki", "init", pki, "--node", "issuer/issuer-2"])
        #expect(made.status == 0, "\(made.stderr)")
        let files = "ca.pem, issuer-2.pem, issuer.pem, operator.pem, tsp.pem, wallet.pem"
        #expect(made.stdout.contains("\(pki) holds \(files)"), "\(made.stdout)")
        for name in ["ca", "tsp", "issuer", "wallet", "operator", "issuer-2"] {
            #expect(FileManager.default.fileExists(atPath: "\(pki)/\(name).pem"), "\(name).pem")
            #expect(FileManager.default.fileExists(atPath: "\(pki)/\(name).key"), "\(name).key")
        }
        #expect(made.stderr.isEmpty, "\(made.stderr)")
        let ca = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/ca.pem"))
        // A key kept from before that others can read is named: nodes and the CLI refuse it.
        #expect(chmod("\(pki)/tsp.key", 0o644) == 0)
        let again = try await runTokenet(["pki", "init", pki])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(pki)/ca.pem")) == ca, "the CA was made again")
        #expect(
            again.stderr == "tokenet: pki init: warning: \(pki)/tsp.key can be read by other users (mode 644): whoever "
                + "can read it can pose as its owner; run chmod 600 \(pki)/tsp.key; nodes and the CLI refuse it as it is\n",
            "\(again.stderr)")
    }

    /// A CA made anew (ca.pem and ca.key removed) signs every certificate in DIR again, those of an earlier
    /// `--node` run too, with the names they carried; and a certificate there that another CA signed is made again
    /// when it is named. Both were kept, signed by a CA no node started with this ca.pem accepts, and init said the
    /// directory held what it needed.
    @Test func aNewCASignsEveryCertificateAgainAndOneFromAnotherCAIsMadeAgain() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        #expect(try await runTokenet(["pki", "init", pki, "--node", "wallet/wallet-2"]).status == 0)
        for name in ["ca.pem", "ca.key"] { try FileManager.default.removeItem(atPath: "\(pki)/\(name)") }
        let anew = try await runTokenet(["pki", "init", pki])
        #expect(anew.status == 0, "\(anew.stderr)")
        #expect(anew.stdout.contains("created \(pki)/wallet-2.pem (signed again by the new CA)"), "\(anew.stdout)")
        for name in ["tsp", "issuer", "wallet", "operator", "wallet-2"] {
            #expect(
                try await Self.openssl(["verify", "-CAfile", "\(pki)/ca.pem", "\(pki)/\(name).pem"]).status == 0,
                "\(name)")
        }
        let names = try await Self.openssl(["x509", "-in", "\(pki)/wallet-2.pem", "-noout", "-ext", "subjectAltName"])
        #expect(names.output.contains("URI:tokenet://wallet/wallet-2, DNS:localhost, IP Address:127.0.0.1"), "\(names)")

        let other = directory.path("other")
        #expect(try await runTokenet(["pki", "init", other, "--node", "wallet/wallet-2"]).status == 0)
        for suffix in ["pem", "key"] {
            try FileManager.default.removeItem(atPath: "\(pki)/wallet-2.\(suffix)")
            try FileManager.default.copyItem(atPath: "\(other)/wallet-2.\(suffix)", toPath: "\(pki)/wallet-2.\(suffix)")
        }
        let repaired = try await runTokenet(["pki", "init", pki, "--node", "wallet/wallet-2"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(
            repaired.stdout.contains("created \(pki)/wallet-2.pem (the one there was signed by an earlier CA, had "),
            "\(repaired.stdout)")
        #expect(!repaired.stdout.contains("created \(pki)/tsp.pem"), "\(repaired.stdout)")
        #expect(try await Self.openssl(["verify", "-CAfile", "\(pki)/ca.pem", "\(pki)/wallet-2.pem"]).status == 0)
    }

    /// Only Tokenet's certificates are signed again: another certificate in DIR, with its key, is left as it was
    /// (it was replaced by one of Tokenet's, its key lost, and every .pem made world-readable); a Tokenet one an
    /// earlier CA signed is signed again without being named (a run cut short left it behind, and the next one
    /// said all was well); one without its key is named; and an ID already another role's is refused.
    /// A file of someone else's where a certificate goes stops the run before anything is written: refused only
    /// when its turn came, it left DIR with a new CA and half a PKI.
    @Test func aForeignFileStopsTheRunBeforeTheCAIsMade() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        try FileManager.default.createDirectory(atPath: pki, withIntermediateDirectories: true)
        try "not a certificate\n".write(toFile: "\(pki)/wallet.pem", atomically: true, encoding: .utf8)
        let result = try await runTokenet(["pki", "init", pki])
        #expect(result.status == 1, "\(result.stdout)")
        #expect(
            result.stderr.contains("\(pki)/wallet.pem is not a certificate of a Tokenet CA, so it is left alone"),
            "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: pki) == ["wallet.pem"])
    }

    /// Files no node could use are not kept as if they were: another role's certificate copied in under this
    /// role's name, or a key that is not the certificate's. The run said DIR held the files, and exited 0.
    @Test func certificatesNoNodeCouldUseAreNamed() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        #expect(try await runTokenet(["pki", "init", pki]).status == 0)
        for name in ["tsp.pem", "tsp.key"] { try FileManager.default.removeItem(atPath: "\(pki)/\(name)") }
        try FileManager.default.copyItem(atPath: "\(pki)/wallet.pem", toPath: "\(pki)/tsp.pem")
        try FileManager.default.copyItem(atPath: "\(pki)/wallet.key", toPath: "\(pki)/tsp.key")
        let copied = try await runTokenet(["pki", "init", pki])
        #expect(copied.status == 1, "\(copied.stdout)")
        #expect(
            copied.stderr.contains("\(pki)/tsp.pem does not name tokenet://tsp/tsp-1, so no node could use them"),
            "\(copied.stderr)")

        for name in ["tsp.pem", "tsp.key"] { try FileManager.default.removeItem(atPath: "\(pki)/\(name)") }
        #expect(try await runTokenet(["pki", "init", pki]).status == 0)
        try FileManager.default.removeItem(atPath: "\(pki)/tsp.key")
        try FileManager.default.copyItem(atPath: "\(pki)/wallet.key", toPath: "\(pki)/tsp.key")
        let mismatched = try await runTokenet(["pki", "init", pki])
        #expect(mismatched.status == 1, "\(mismatched.stdout)")
        #expect(mismatched.stderr.contains("\(pki)/tsp.key is not the key of \(pki)/tsp.pem"), "\(mismatched.stderr)")
    }

    @Test func otherFilesInTheDirectoryAreLeftAloneAndStaleOnesNamed() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        #expect(try await runTokenet(["pki", "init", pki]).status == 0)
        let web = try await Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            "\(pki)/web.key", "-out", "\(pki)/web.pem", "-days", "30", "-subj", "/CN=my-web-server/O=Acme",
        ])
        #expect(web.status == 0, "\(web.output)")
        #expect(chmod("\(pki)/web.pem", 0o600) == 0)
        let foreign = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/web.pem"))
        let other = directory.path("other")
        #expect(try await runTokenet(["pki", "init", other, "--node", "issuer/bank-2"]).status == 0)
        for name in ["bank-2.pem", "bank-2.key"] {
            try FileManager.default.copyItem(atPath: "\(other)/\(name)", toPath: "\(pki)/\(name)")
        }
        try FileManager.default.copyItem(atPath: "\(other)/tsp.pem", toPath: "\(pki)/orphan.pem")

        let again = try await runTokenet(["pki", "init", pki])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(pki)/web.pem")) == foreign)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(pki)/web.pem")[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o777 } == 0o600)
        #expect(
            again.stdout.contains("created \(pki)/bank-2.pem (the one there was signed by an earlier CA"),
            "\(again.stdout)")
        #expect(try await Self.openssl(["verify", "-CAfile", "\(pki)/ca.pem", "\(pki)/bank-2.pem"]).status == 0)
        let names = try await Self.openssl(["x509", "-in", "\(pki)/bank-2.pem", "-noout", "-ext", "subjectAltName"])
        #expect(names.output.contains("URI:tokenet://issuer/bank-2"), "\(names.output)")
        #expect(
            again.stderr.contains("\(pki)/orphan.pem is not signed by \(pki)/ca.pem and has no orphan.key beside it"),
            "\(again.stderr)")
        #expect(!again.stdout.contains("orphan.pem"), "listed with keys: \(again.stdout)")

        let taken = try await runTokenet(["pki", "init", pki, "--node", "wallet/bank-2"])
        #expect(taken.status == 1)
        #expect(
            taken.stderr.contains("the ID bank-2 is tokenet://issuer/bank-2's already, in \(pki)/bank-2.pem"),
            "\(taken.stderr)")
        // A built-in identity's ID too (wallet.pem is tokenet://wallet/wallet-1).
        let builtIn = try await runTokenet(["pki", "init", pki, "--node", "operator/wallet-1"])
        #expect(builtIn.status == 1)
        #expect(builtIn.stderr.contains("the ID wallet-1 is tokenet://wallet/wallet-1's already"), "\(builtIn.stderr)")
        // And one that differs only in case: read as one node by a person, and one file where names ignore case.
        let cased = try await runTokenet(["pki", "init", pki, "--node", "operator/WALLET-1"])
        #expect(cased.status == 1)
        #expect(
            cased.stderr.contains("the ID WALLET-1 differs only in case from tokenet://wallet/wallet-1's"),
            "\(cased.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(pki)/WALLET-1.pem"))
        // A certificate no Tokenet CA issued is left alone when its name is asked for, with its key.
        let named = try await runTokenet(["pki", "init", pki, "--node", "wallet/web"])
        #expect(named.status == 1)
        #expect(named.stderr.contains("\(pki)/web.pem is not a certificate of a Tokenet CA, so it is left alone"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(pki)/web.pem")) == foreign)
    }

    static func openssl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await run("/usr/bin/openssl", arguments)
    }

    static func genCerts(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await run(PackageRoot.url.appendingPathComponent("Tools/gen-certs").path, arguments)
    }

    /// Runs `executable` with SpawnedProcess, as the other tests do: Foundation's `Process` crashed a full parallel
    /// run inside `Process.run()`. Its output and errors are short (a few lines), so reading one pipe to its end
    /// before the other cannot fill the second. Waited for off the cooperative pool (`offThePool`): a test that
    /// waits on one of its few threads holds every other test back meanwhile.
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offThePool {
            let process = try SpawnedProcess(
                executable, arguments, standardInput: .nullDevice, standardOutput: .pipe, standardError: .pipe)
            let output = process.standardOutput?.readDataToEndOfFile() ?? Data()
            let errors = process.standardError?.readDataToEndOfFile() ?? Data()
            let termination = process.waitUntilExit(killingAfter: 120)
            return (termination.status, String(decoding: output + errors, as: UTF8.self))
        }
    }

    /// gen-certs' test options asked of a DIR they cannot apply to: `--untrusted` for a DIR holding the development
    /// CA, and `--no-uri-san NAME` for a NAME.pem with a tokenet:// name, were ignored without a word, so a test
    /// meant to present an untrusted certificate or one without a name presented a valid one.
    @Test func testOptionsThatCannotApplyToTheDirectoryAreRefused() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        #expect(try await Self.genCerts(["--node", "wallet/w2", pki]).status == 0)
        let untrusted = try await Self.genCerts(["--untrusted", pki])
        #expect(untrusted.status == 1)
        #expect(
            untrusted.output.contains(
                "--untrusted makes a new CA, but \(pki) already holds one (CN=Tokenet Development CA,O=Tokenet)"),
            "\(untrusted.output)")
        let named = try await Self.genCerts(["--no-uri-san", "w2", pki])
        #expect(named.status == 1)
        #expect(named.output.contains("\(pki)/w2.pem carries a tokenet:// name"), "\(named.output)")
        #expect(try await Self.genCerts(["--no-uri-san", "tsp", pki]).status == 2)
        // What they can apply to is still made, and kept when asked again.
        #expect(try await Self.genCerts(["--no-uri-san", "plain", pki]).status == 0)
        #expect(try await Self.genCerts(["--no-uri-san", "plain", pki]).status == 0)
        let other = directory.path("other")
        #expect(try await Self.genCerts(["--untrusted", other]).status == 0)
        #expect(try await Self.genCerts(["--untrusted", other]).status == 0)
    }

    /// A DIR holding half a CA (its key lost) was given a new CA, and every certificate not named in that run stayed
    /// signed by the old one; a CA that cannot sign failed with "its message is above" and nothing above.
    @Test func aDirectoryWithHalfACAOrADamagedOneIsRefusedWithTheReason() async throws {
        let directory = try TemporaryDirectory()
        let pki = directory.path("pki")
        #expect(try await runTokenet(["pki", "init", pki, "--node", "issuer/issuer-2"]).status == 0)
        let certificate = try Data(contentsOf: URL(fileURLWithPath: "\(pki)/tsp.pem"))
        try FileManager.default.removeItem(atPath: "\(pki)/ca.key")
        let half = try await runTokenet(["pki", "init", pki])
        #expect(half.status == 1)
        #expect(half.stderr.contains("\(pki) holds ca.pem but no ca.key, so its CA cannot sign"), "\(half.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(pki)/tsp.pem")) == certificate)

        let damaged = directory.path("damaged")
        try FileManager.default.createDirectory(atPath: damaged, withIntermediateDirectories: true)
        for name in ["ca.pem", "ca.key"] {
            try Data("junk\n".utf8).write(to: URL(fileURLWithPath: "\(damaged)/\(name)"))
        }
        let refused = try await runTokenet(["pki", "init", damaged])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot sign \(damaged)/tsp.pem with"), "\(refused.stderr)")
    }

    @Test(arguments: [
        (["pki"], "pki: expected 'init DIR', got nothing"),
        (["pki", "make", "x"], "pki: expected 'init DIR', got 'make'"),
        (["pki", "init"], "pki init: missing DIR"),
        (["pki", "init", "a", "b"], "pki init: give one DIR, not also 'b'"),
        (["pki", "init", "a", "--node", "bank/b-1"], "--node: expected ROLE/ID with ROLE tsp, issuer, wallet"),
        (["pki", "init", "a", "--force"], "pki init: unknown option '--force'"),
        (["pki", "init", "a", "--node", "issuer/x", "--node", "wallet/x"], "the ID x is given twice"),
        (["pki", "init", "a", "--node", "issuer/tsp"], "tsp.pem is made for every DIR anyway; choose another ID"),
        (["pki", "init", "a", "--node", "operator/CA"], "CA.pem is made for every DIR anyway; choose another ID"),
        (
            ["pki", "init", "a", "--node", "wallet/b", "--node", "issuer/B"],
            "the ID B is given twice (IDs are compared"
        ),
        (["pki", "init", "a", "--node", "wallet/ca.key"], "an ID ending in .pem or .key names a file"),
        // A hidden file, which the renewal of certificates after a CA change skipped.
        (["pki", "init", "a", "--node", "issuer/.hidden"], "an ID starting with '.' makes a hidden file"),
        (["pki", "init", "a", "--node", "issuer/.."], "an ID starting with '.' makes a hidden file"),
        (["pki", "init", "/etc/hostname"], "pki init: /etc/hostname is a file, not a directory"),
        // Shown in full in listings: refused, and not echoed.
        (
            ["pki", "init", "a", "--node", "wallet/4111111111111111"],
            "the ID '************1111' holds a card number, which listings would show in full"
        ),
        // Longer than a certificate's common name holds (openssl's own error, with status 1).
        (
            ["pki", "init", "a", "--node", "issuer/" + String(repeating: "b", count: 65)],
            "an ID has at most 64 characters; this one has 65"
        ),
    ])
    func usageMistakesAreNamed(arguments: [String], message: String) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
