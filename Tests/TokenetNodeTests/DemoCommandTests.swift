import Foundation
import Testing

/// Runs the built `tokenet` executable end to end.
@Suite struct DemoCommandTests {
    @Test func demoStartsThreeNodesAndStopsThemCleanly() async throws {
        let result = try await LaunchedProcess.run("tokenet", ["demo", "--timeout", "60"])
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        // Lines look like "  ready tsp-node pid=1234 listen=127.0.0.1:40001".
        let ready = result.stdout.split(separator: "\n").compactMap { line -> (String, Int32)? in
            let words = line.split(separator: " ")
            guard words.count == 4, words[0] == "ready", words[2].hasPrefix("pid="),
                let pid = Int32(words[2].dropFirst(4))
            else { return nil }
            return (String(words[1]), pid)
        }
        #expect(ready.map(\.0) == ["tsp-node", "wallet-node", "issuer-node"])
        #expect(Set(ready.map(\.1)).count == 3)
        #expect(result.stdout.components(separatedBy: "exited with status 0").count == 4)
    }

    @Test func unknownCommandIsAUsageError() async throws {
        let result = try await LaunchedProcess.run("tokenet", ["provision-everything"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown command 'provision-everything'"))
        #expect(result.stderr.contains("demo"))
        #expect(!result.stderr.contains("did you mean"), "\(result.stderr)")
    }

    /// A slip of a letter or two names the command meant, as a misspelt option does.
    @Test(arguments: [(["lst", "127.0.0.1:1"], "list"), (["help", "secnario"], "scenario"), (["Demo"], "demo")])
    func aMisspeltCommandNamesTheOneMeant(arguments: [String], meant: String) async throws {
        let result = try await LaunchedProcess.run("tokenet", arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains("; did you mean '\(meant)'? (commands: "), "\(result.stderr)")
    }

    @Test func noCommandPrintsTheUsageOnStderr() async throws {
        let result = try await LaunchedProcess.run("tokenet", [])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr.contains("Usage: tokenet COMMAND [OPTIONS]"))
        let help = try await LaunchedProcess.run("tokenet", ["--help"])
        #expect(help.status == 0)
        #expect(help.stderr.isEmpty)
        #expect(help.stdout.contains("Usage: tokenet COMMAND [OPTIONS]"))
        #expect(help.stdout == result.stderr)
    }

    /// `tokenet --help wallet` is `tokenet help wallet`; help given more than one command says what to run instead,
    /// where the extra words were dropped without a word.
    @Test func helpTakesOneCommand() async throws {
        let wallet = try await LaunchedProcess.run("tokenet", ["help", "wallet"])
        for flag in ["--help", "-h"] {
            let result = try await LaunchedProcess.run("tokenet", [flag, "wallet"])
            #expect(result.status == 0 && result.stdout == wallet.stdout, "\(flag): \(result.stderr)")
        }
        let extra = try await LaunchedProcess.run("tokenet", ["help", "wallet", "add-card"])
        #expect(extra.status == 2 && extra.stdout.isEmpty)
        #expect(
            extra.stderr.contains(
                "help takes one command, and 'add-card' followed it; for more about it, run "
                    + "'tokenet wallet add-card --help'"), "\(extra.stderr)")
        #expect(try await LaunchedProcess.run("tokenet", ["--help", "nosuch"]).status == 2)
    }

    @Test func demoRejectsBadTimeout() async throws {
        let result = try await LaunchedProcess.run("tokenet", ["demo", "--timeout", "soon"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--timeout"))
    }

    /// The message states the range the value is checked against: 0 itself is refused, so it is not "between 0 and".
    @Test(arguments: ["0", "-1", "3601", "nan"])
    func demoTimeoutOutOfRangeStatesTheRange(value: String) async throws {
        let result = try await LaunchedProcess.run("tokenet", ["demo", "--timeout", value])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("--timeout: expected seconds above 0 and at most 3600, got '\(value)'"),
            "\(result.stderr)")
    }

    @Test func everySubcommandHasHelp() async throws {
        for command in ["demo", "version", "help"] {
            let result = try await LaunchedProcess.run("tokenet", [command, "--help"])
            #expect(result.status == 0)
            #expect(result.stdout.contains("Usage: tokenet \(command)"))
        }
    }
}
