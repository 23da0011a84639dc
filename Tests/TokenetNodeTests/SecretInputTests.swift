import Foundation
import Testing
import TokenetRPC
import TokenetTestSupport
import TokenetWire

/// `--pan -`, `--cvc -` and `--pin -` read their values from standard input, a line each in the order the flags
/// were given, so that a card number need not be on the command line, where `ps` shows it to every user.
@Suite(.timeLimit(.minutes(3))) struct SecretInputTests {
    /// Serves WalletControl/AddCard; each call fails with a message saying whether the card number and CVC it
    /// received are the ones expected (so that neither is printed).
    private static func addCard(_ flags: [String], stdin: String) async throws -> ProcessResult {
        var router = RPCRouter()
        router.unary(WalletV1.WalletControl.addCard) { (request, _) async throws -> WalletV1.AddCardResponse in
            guard case .manual(let card) = request.source else { throw RPCError(.invalidArgument, "no manual card") }
            let pan = card.pan == "4111111111111111" ? "pan ok" : "pan \(card.pan.count) digits"
            let cvc = card.cvc == "123" ? "cvc ok" : "cvc \(card.cvc.count) digits"
            throw RPCError(.failedPrecondition, "\(pan), \(cvc), expiry \(card.expiry)")
        }
        let pipe = Pipe()
        try pipe.fileHandleForWriting.write(contentsOf: Data(stdin.utf8))
        try pipe.fileHandleForWriting.close()
        let pki = DevelopmentPKI.shared
        return try await runTokenet(
            servedOverTLSBy: router, certificate: pki.path("wallet.pem"), key: pki.path("wallet.key"),
            standardInput: pipe.fileHandleForReading
        ) { address in
            [
                "wallet", "add-card", address, "--deadline", "20s", "--cacert", pki.path("ca.pem"), "--cert",
                pki.path("operator.pem"), "--key", pki.path("operator.key"),
            ] + flags
        }
    }

    /// The operator's TLS files, for commands that end before they connect (nothing listens at 127.0.0.1:1): over
    /// `--plaintext` a secret is refused before it is read.
    private static var operatorTLS: [String] {
        let pki = DevelopmentPKI.shared
        return ["--cacert", pki.path("ca.pem"), "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key")]
    }

    @Test(arguments: [
        (["--pan", "-", "--exp", "12/29", "--cvc", "-"], "4111111111111111\n123\n"),
        (["--cvc", "-", "--exp", "12/29", "--pan", "-"], "123\r\n4111111111111111"),
        (["--pan", "-", "--exp", "12/29", "--cvc", "123"], "4111111111111111\n"),
    ])
    func eachDashTakesALineInTheOrderGiven(flags: [String], stdin: String) async throws {
        let result = try await Self.addCard(flags, stdin: stdin)
        #expect(result.status == 64 + 9, "\(result.stderr)")
        #expect(result.stderrWithoutTrace == "ERROR: FAILED_PRECONDITION: pan ok, cvc ok, expiry 12/29\n")
        // The failed call's trace id follows, to find it in the nodes' logs.
        #expect(result.stderr.hasSuffix(")\n") && result.stderr.contains("\n(trace "), "\(result.stderr)")
    }

    /// Too few lines, or an empty one, is a usage error naming the flag and what was missing; nothing is sent.
    @Test(arguments: [
        ("", "--pan -: standard input ended before the card number; give it on a line of its own (one line each"),
        ("4111111111111111\n", "--cvc -: standard input ended before the CVC"),
        ("\n123\n", "--pan -: standard input gave an empty line for the card number"),
    ])
    func missingLinesAreNamed(stdin: String, message: String) async throws {
        let result = try await runTokenet(
            ["wallet", "add-card", "127.0.0.1:1", "--pan", "-", "--exp", "12/29", "--cvc", "-"] + Self.operatorTLS,
            stdin: stdin)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tokenet: wallet add-card: \(message)"), "\(result.stderr)")
        #expect(!result.stderr.contains("4111111111111111"), "\(result.stderr)")
    }

    /// The rest of the command line is checked before a secret is read: a mistake there is said without the card
    /// number typed for nothing (standard input is empty here: reading it would have said so instead).
    @Test(arguments: [
        (["--pan", "-"], "wallet add-card: --pan needs --exp MM/YY"),
        (["--pan", "-", "--exp", "12/29", "--scheme", "visa"], "wallet add-card: --scheme goes with --receipt"),
        (["--pan", "-", "--exp", "12/29", "--bogus"], "wallet add-card: unknown option '--bogus'"),
        (["--pan", "-", "--exp", "2029-12"], "wallet add-card: the expiry date must be written as MM/YY"),
        (["--pan", "-", "--exp", "13/29"], "wallet add-card: the expiry month 13 is not a month; use 01 to 12"),
        (["--pan", "-", "--exp", "12/29", "--cvc", "12a"], "wallet add-card: the security code (CVC) must be 3 or 4"),
        (["--pan", "-", "--exp", "12/29", "--language", "12!"], "wallet add-card: the language '12!' is not a BCP-47"),
        (
            ["--pan", "-", "--exp", "12/29", "--name", String(repeating: "A", count: 101)],
            "wallet add-card: the cardholder name is longer than 100 characters"
        ),
    ])
    func aMistakeElsewhereIsSaidBeforeAnythingIsRead(flags: [String], message: String) async throws {
        let result = try await runTokenet(["wallet", "add-card", "127.0.0.1:1", "--plaintext"] + flags, stdin: "")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("standard input"), "\(result.stderr)")
    }

    /// A TLS file that cannot serve is named before the secret is read, in the connection's own words.
    @Test func anUnusableTLSFileIsNamedBeforeAnythingIsRead() async throws {
        let pki = DevelopmentPKI.shared
        let result = try await runTokenet(
            [
                "wallet", "add-card", "127.0.0.1:1", "--pan", "-", "--exp", "12/29", "--cacert", "/nonexistent/ca.pem",
                "--cert", pki.path("operator.pem"), "--key", pki.path("operator.key"),
            ], stdin: "")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("tokenet: --cacert /nonexistent/ca.pem (given by --cacert or TOKENET_CACERT) "),
            "\(result.stderr)")
        #expect(!result.stderr.contains("standard input"), "\(result.stderr)")
    }

    /// A line too long for any secret is refused naming the flag.
    @Test func anOverlongLineIsRefusedNamingTheFlag() async throws {
        let result = try await runTokenet(
            ["wallet", "add-card", "127.0.0.1:1", "--pan", "-", "--exp", "12/29"] + Self.operatorTLS,
            stdin: String(repeating: "4", count: 300) + "\n")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix(
                "tokenet: wallet add-card: --pan -: the line read for the card number holds more than 256 bytes"),
            "\(result.stderr)")
    }

    /// A name or other flag given as `-` is taken as it is: only secrets are read.
    @Test func onlySecretFlagsRead() async throws {
        let result = try await Self.addCard(
            ["--pan", "-", "--exp", "12/29", "--cvc", "123", "--name", "-"], stdin: "4111111111111111\n")
        #expect(
            result.stderrWithoutTrace == "ERROR: FAILED_PRECONDITION: pan ok, cvc ok, expiry 12/29\n",
            "\(result.stderr)")
    }
}
