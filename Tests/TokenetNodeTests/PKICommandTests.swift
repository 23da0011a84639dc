import Foundation
import Testing
import TokenetTestSupport

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
        (["pki", "init", "/etc/hostname"], "pki init: /etc/hostname is a file, not a directory"),
    ])
    func usageMistakesAreNamed(arguments: [String], message: String) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
