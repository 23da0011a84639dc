import Testing

/// A usage mistake ends with where to read the usage: the command's own help, which lists its options, when the
/// command is known (the overview alone lists none of them).
@Suite struct UsageHelpHintTests {
    @Test func aCommandsMistakePointsToItsOwnHelp() throws {
        let result = try runTokenet(["wallet", "add-card", "127.0.0.1:1", "--plaintext", "--pan", "4761000010000009"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr
                == "tokenet: wallet add-card: --pan needs --exp MM/YY\nRun 'tokenet wallet --help' for usage.\n")
    }

    @Test func anUnknownCommandPointsToTheOverview() throws {
        for arguments in [["walet", "cards"], ["help", "walet"]] {
            let result = try runTokenet(arguments)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.hasSuffix("\nRun 'tokenet --help' for usage.\n"), "\(result.stderr)")
        }
    }
}
