import Testing

/// A usage mistake ends with where to read the usage: the command's own help, which lists its options, when the
/// command is known (the overview alone lists none of them).
@Suite struct UsageHelpHintTests {
    @Test func aCommandsMistakePointsToItsOwnHelp() async throws {
        let result = try await runTokenet([
            "wallet", "add-card", "127.0.0.1:1", "--plaintext", "--pan", "4761000010000009",
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: wallet add-card: --pan needs --exp MM/YY\nRun 'tokenet wallet --help' for usage.\n")
    }

    /// Help given a value is said as such by every command; most said "unknown option '--help'", as if --help did
    /// not exist.
    @Test func helpGivenAValueIsSaidAsSuch() async throws {
        for (arguments, said) in [
            (["--help=1"], "tokenet: --help takes no value"),
            (["demo", "--help=1"], "tokenet: demo: --help takes no value"),
            (["proxy", "-h=1"], "tokenet: proxy: -h takes no value"),
            (["scenario", "--help=yes"], "tokenet: scenario: --help takes no value"),
            (["pki", "init", "--help=1"], "tokenet: pki init: --help takes no value"),
            (["list", "127.0.0.1:1", "--help=1"], "tokenet: list: --help takes no value"),
            // And an argument after --version is refused as `tokenet version` refuses it.
            (["--version", "x"], "tokenet: version: unexpected argument 'x'"),
        ] {
            let result = try await runTokenet(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix(said + "\n"), "\(arguments): \(result.stderr)")
        }
    }

    @Test func anUnknownCommandPointsToTheOverview() async throws {
        for arguments in [["walet", "cards"], ["help", "walet"]] {
            let result = try await runTokenet(arguments)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasSuffix("\nRun 'tokenet --help' for usage.\n"), "\(result.stderr)")
        }
    }
}
