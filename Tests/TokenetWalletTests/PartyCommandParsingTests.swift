import Testing
import TokenetTestSupport

/// `tokenet wallet|issuer|tsp` refuse bad arguments with exit status 2 and a message naming the problem, before
/// connecting anywhere (the address below has nothing listening).
@Suite struct PartyCommandParsingTests {
    static let nowhere = ["127.0.0.1:1", "--plaintext"]

    static let usageErrors: [([String], String)] = [
        (["wallet"], "missing action"),
        (["wallet", "remove-card"], "unknown action 'remove-card'"),
        (["wallet", "add-card"] + nowhere, "give the card with --pan"),
        // A mistyped option is named, not taken for a missing card source.
        (["wallet", "add-card", "--pam", "4111111111111111", "--exp", "12/29"] + nowhere, "unknown option '--pam'"),
        (["wallet", "add-card", "--push-sesion", "s1"] + nowhere, "unknown option '--push-sesion'"),
        (["tsp", "encrypt-card", "--pna", "4111111111111111", "--exp", "12/29"] + nowhere, "unknown option '--pna'"),
        (["wallet", "add-card", "--pan", "4111111111111111", "--receipt", "r"] + nowhere, "cannot be combined"),
        (["wallet", "add-card", "--pan", "4111111111111111"] + nowhere, "--pan needs --exp"),
        (["wallet", "add-card", "--pan", "1", "--exp", "1/2", "--pan", "2"] + nowhere, "--pan may be given once"),
        (["wallet", "add-card", "--pan"], "--pan needs a value"),
        (["wallet", "add-card", "--receipt", "r"] + nowhere, "--receipt needs --scheme"),
        (
            ["wallet", "add-card", "--receipt", "r", "--scheme", "amex"] + nowhere,
            "--scheme must be mastercard or visa"
        ),
        (["wallet", "add-card", "--push-session", "p", "--cvc", "123"] + nowhere, "--cvc goes with --pan"),
        (["wallet", "add-card", "--push-session", "p", "--scheme", "visa"] + nowhere, "--scheme goes with --receipt"),
        (
            ["wallet", "add-card", "--pan", "4111111111111111", "--exp", "12/30", "--input-method", "fax"] + nowhere,
            "--input-method must be"
        ),
        (["wallet", "add-card", "--push-session", "p", "--json=yes"] + nowhere, "--json takes no value"),
        (["wallet", "add-card", "--push-session", "p"], "missing ADDR"),
        (["wallet", "accept-terms"] + nowhere, "missing CARD_REF"),
        // An empty operand is named as a missing one is.
        (["wallet", "accept-terms", "127.0.0.1:1", "", "--plaintext"], "CARD_REF is empty"),
        (["issuer", "enroll", "127.0.0.1:1", "ch-1", "", "--plaintext"], "ACCOUNT is empty"),
        (["tsp", "history", "127.0.0.1:1", "", "--plaintext"], "DIGITAL_CARD_ID is empty"),
        (["wallet", "accept-terms", "127.0.0.1:1", "card-1", "card-2", "--plaintext"], "unexpected arguments"),
        (["wallet", "cards", "not-an-address"], "is not an address"),
        (["wallet", "cards", "127.0.0.1:1", "--frobnicate"], "unknown option '--frobnicate'"),
        (["issuer", "push-card", "127.0.0.1:1", "card-1", "--plaintext"], "--mode receipt|session is required"),
        (["issuer", "push-card", "127.0.0.1:1", "card-1", "--mode", "fax", "--plaintext"], "--mode must be"),
        (["issuer", "push-card", "--mode", "receipt"] + nowhere, "missing CARD_ID"),
        (["tsp", "history"] + nowhere, "missing DIGITAL_CARD_ID"),
        (["tsp", "tokens", "127.0.0.1:1", "extra", "--plaintext"], "unexpected arguments"),
        (["wallet", "suspend", "127.0.0.1:1", "card-1", "--plaintext"], "--reason CODE is required"),
        // A reason code is 1 to 64 of A-Z, 0-9 and _ (lower case is upper-cased): anything else is refused here,
        // by the flag, before any node is asked.
        (
            ["wallet", "delete", "127.0.0.1:1", "card-1", "--reason", "lost card", "--plaintext"],
            "wallet delete: --reason \"lost card\" is not a reason code: use 1 to 64 of A-Z, 0-9 and _"
        ),
        // What was typed is quoted masked, as everywhere the CLI prints: a card number given by mistake showed in
        // clear in the messages that quoted a --reason, a --language, an action or a file path.
        (
            ["wallet", "suspend", "127.0.0.1:1", "card-1", "--reason", "x y 4761000010000009", "--plaintext"],
            "--reason \"x y ************0009\" is not a reason code"
        ),
        (["wallet", "bogus-4761000010000009", "127.0.0.1:1"], "unknown action 'bogus-************0009'"),
        (
            ["issuer", "suspend-tokens", "127.0.0.1:1", "DNITHE1", "--reason", "LOST\nCARD", "--plaintext"],
            "--reason \"LOST\\nCARD\" is not a reason code"
        ),
        (
            ["tsp", "resume-token", "127.0.0.1:1", "DNITHE1", "--reason", String(repeating: "X", count: 65)]
                + ["--plaintext"],
            "--reason is 65 characters long; a reason code is 1 to 64 of A-Z"
        ),
        (["wallet", "delete"] + nowhere, "missing CARD_REF"),
        (["wallet", "pay"] + nowhere, "missing CARD_REF"),
        (
            ["issuer", "suspend-tokens", "--reason", "LOST_CARD"] + nowhere,
            "give DIGITAL_CARD_IDs (see tokenet tsp tokens) or --card CARD_ID for every token of a card (see tokenet "
                + "issuer cards): one of them"
        ),
        (
            ["issuer", "delete-tokens", "127.0.0.1:1", "DNITHE1", "--card", "card-1", "--reason", "X", "--plaintext"],
            "or --card CARD_ID for every token of a card (see tokenet issuer cards): one of them, not both"
        ),
        (["issuer", "renew-card", "127.0.0.1:1", "card-1", "--plaintext"], "give --pan, --exp or both"),
        (
            [
                "issuer-app", "activate", "127.0.0.1:1", "--code", "ABC", "--ref", "r", "--link", "otp://x",
                "--plaintext",
            ],
            "--link carries the code and the reference; give --link, or --code and --ref, not both"
        ),
        (
            ["issuer", "renew-card", "127.0.0.1:1", "card-1", "--abandon", "--exp", "12/31", "--plaintext"],
            "--abandon takes no --pan or --exp"
        ),
        (
            ["issuer", "renew-card", "127.0.0.1:1", "card-1", "--force-complete", "--pan", "1", "--plaintext"],
            "--force-complete takes no --pan or --exp"
        ),
        (
            ["issuer", "renew-card", "127.0.0.1:1", "card-1", "--abandon", "--force-complete", "--plaintext"],
            "give --abandon or --force-complete, not both"
        ),
        (["issuer", "send-message", "127.0.0.1:1", "DNITHE1", "--title", "t", "--plaintext"], "--body are required"),
        (["issuer-app", "authn", "127.0.0.1:1", "authn-1", "--plaintext"], "exactly one of --proceed and --cancel"),
        (
            ["issuer-app", "authn", "127.0.0.1:1", "authn-1", "--proceed", "--plaintext"],
            "--proceed needs the app's --pin"
        ),
        (
            ["issuer-app", "authn", "127.0.0.1:1", "authn-1", "--cancel", "--pin", "2580", "--plaintext"],
            "--cancel takes no --pin"
        ),
        (
            ["issuer-app", "authn", "127.0.0.1:1", "authn-1", "--proceed", "--cancel", "--plaintext"],
            "exactly one of --proceed and --cancel"
        ),
        (["tsp", "resume-token", "--reason", "X"] + nowhere, "missing DIGITAL_CARD_ID"),
        (["tsp", "simulate-transaction", "--amount", "1", "--merchant", "M"] + nowhere, "--card DIGITAL_CARD_ID"),
        (["tsp", "simulate-transaction", "--card", "D", "--merchant", "M"] + nowhere, "--amount is required"),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "12.345", "--merchant", "M"] + nowhere,
            "--amount 12.345 has more decimals than USD's 2"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "12.5", "--currency", "jpy", "--merchant", "M"]
                + nowhere,
            "--amount 12.5: JPY has no minor unit; give a whole amount"
        ),
        // The currency is looked at first: its decimals were blamed for an amount in a code that is none.
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "1.250", "--currency", "US", "--merchant", "M"]
                + nowhere,
            "--currency must be an ISO 4217 code in use, such as USD (XTS for testing), not 'US'"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "1.", "--currency", "KWD", "--merchant", "M"]
                + nowhere,
            "--amount must look like 12.500, not '1.'"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "0.00", "--merchant", "M"] + nowhere,
            "--amount must be positive"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "+5", "--merchant", "M"] + nowhere,
            "--amount must look like 12.50, not '+5'"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "99999999999999999999", "--merchant", "M"]
                + nowhere,
            "--amount is too large; at most 9999999999.99"
        ),
        (
            ["tsp", "simulate-transaction", "--card", "D", "--amount", "92233720368547758.08", "--merchant", "M"]
                + nowhere,
            "is too large"
        ),
        (["tsp", "simulate-transaction", "--card", "D", "--amount", "1"] + nowhere, "--merchant is required"),
    ]

    @Test(arguments: usageErrors) func usageError(_ arguments: [String], _ message: String) async throws {
        let result = try await offThePool { try runExecutable("tokenet", arguments) }
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
    }

    @Test func mutualTLSNeedsTheOperatorsFiles() async throws {
        let result = try await offThePool {
            try runExecutable("tokenet", ["wallet", "cards", "127.0.0.1:1", "--cacert", "ca.pem"])
        }
        #expect(result.status == 2)
        #expect(result.stderr.contains("missing --cert, --key"))
    }

    @Test func anUnreachableNodeIsExitStatusOne() async throws {
        let result = try await offThePool { try runExecutable("tokenet", ["wallet", "cards"] + Self.nowhere) }
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot connect to 127.0.0.1:1"))
    }

    @Test(arguments: ["wallet", "issuer", "tsp"]) func helpDescribesEveryAction(_ command: String) async throws {
        let result = try await offThePool { try runExecutable("tokenet", [command, "--help"]) }
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("Usage: tokenet \(command) "))
        #expect(result.stdout.contains("--cacert FILE") && result.stdout.contains("--json"))
    }
}
