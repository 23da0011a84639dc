import Testing
import TokenetTestSupport

/// An option that takes one value, given twice, is refused with exit status 2 naming it: taking the last of the two
/// dropped the other without a word (`proxy --to A --to B` carried everything to B). `-H`, which adds a metadata
/// entry each time, may be repeated.
@Suite struct RepeatedOptionTests {
    @Test(arguments: [
        (["proxy", "--to", "127.0.0.1:1", "--to", "127.0.0.1:2"], "proxy: --to may be given once"),
        (["proxy", "--to", "127.0.0.1:1", "--delay", "1ms", "--delay=2ms"], "proxy: --delay may be given once"),
        (["demo", "--timeout", "5", "--timeout", "60"], "demo: --timeout may be given once"),
        (["up", "--timeout=5", "--timeout", "60"], "up: --timeout may be given once"),
        (["scenario", "--tsp", "127.0.0.1:1", "--tsp", "127.0.0.1:2", "s"], "scenario: --tsp may be given once"),
        (["decode", "--calls", "a", "--calls", "b", "c"], "decode: --calls may be given once"),
        (["list", "127.0.0.1:1", "--plaintext", "--deadline", "1s", "--deadline", "9s"], "list: --deadline may be"),
        (["wallet", "cards", "127.0.0.1:1", "--cacert", "a", "--cacert", "b"], "wallet cards: --cacert may be given"),
        (["tsp", "suspend-token", "127.0.0.1:1", "D", "--reason", "A", "--reason=B"], "--reason may be given once"),
    ])
    func aSingleValuedOptionGivenTwiceIsRefused(arguments: [String], message: String) async throws {
        let result = try await runTokenet(arguments)
        #expect(result.status == 2 && result.stdout.isEmpty, "\(arguments): \(result.stdout)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
    }

    /// A connection option's value written after `=` stays its value in a party command, whatever it looks like: the
    /// command handed `--cacert=--key` on as two arguments, and was refused for the advice it gives (write
    /// `--cacert=--key` if that is the value).
    @Test func aValueAfterTheEqualsSignIsTheValue() async throws {
        let result = try await runTokenet(["wallet", "cards", "127.0.0.1:1", "--cacert=--key"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("missing --cert, --key"), "\(result.stderr)")
    }

    /// `--wallet-node` takes a certificate's ID alone, and only for a receipt: the full name, or none at all, bound
    /// a receipt no wallet node could redeem, or bound it to none.
    @Test(arguments: [
        (
            ["--mode", "receipt", "--wallet-node", "tokenet://wallet/wallet-1"],
            "--wallet-node takes the ID of the wallet"
        ),
        (["--mode", "receipt", "--wallet-node", ""], "--wallet-node is empty: give it a value, or leave the flag out"),
        (["--mode", "session", "--wallet-node", "wallet-1"], "--wallet-node is for --mode receipt"),
    ])
    func aReceiptsWalletNodeIsAnIDAlone(arguments: [String], message: String) async throws {
        let result = try await runTokenet(["issuer", "push-card", "127.0.0.1:1", "card-1", "--plaintext"] + arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// An empty value (a shell variable not set) is refused before anything is sent: it reached the node as a field
    /// left out (status 67), or, for a filter, listed everything as if the flag were not there.
    @Test(arguments: [
        ["issuer", "renew-card", "127.0.0.1:1", "card-1", "--pan", ""],
        ["tsp", "simulate-transaction", "127.0.0.1:1", "--card", "D", "--amount", "1.00", "--merchant", ""],
        ["tsp", "tokens", "127.0.0.1:1", "--wallet-account="],
    ])
    func anEmptyValueIsRefused(arguments: [String]) async throws {
        let result = try await runTokenet(arguments + ["--plaintext"])
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(" is empty: give it a value, or leave the flag out"), "\(result.stderr)")
    }

    @Test func headersMayBeRepeated() async throws {
        let result = try await runTokenet([
            "call", "127.0.0.1:1", "x.Y/Z", "--plaintext", "-H", "a: 1", "-H", "b: 2", "--header", "c: 3",
        ])
        #expect(result.status == 1 && result.stderr.contains("cannot connect to 127.0.0.1:1"), "\(result.stderr)")
    }
}
