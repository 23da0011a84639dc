import Foundation
import Testing
import TokenetTestSupport

/// The README shows the `--help` of `tokenet`, of its party commands and of each node as the programs print it; a
/// command added or changed without the README following leaves readers with options that do not exist (or a
/// `--plaintext` marked "not yet available" long after it was).
@Suite struct ReadmeHelpTests {
    let readme: String

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    @Test(arguments: [
        ("tokenet", ["--help"]), ("tokenet", ["demo", "--help"]), ("tokenet", ["wallet", "--help"]),
        ("tokenet", ["issuer", "--help"]), ("tokenet", ["issuer-app", "--help"]), ("tokenet", ["tsp", "--help"]),
        ("tokenet", ["version", "--help"]), ("tokenet", ["proxy", "--help"]), ("tokenet", ["decode", "--help"]),
        ("tokenet", ["scenario", "--help"]), ("tokenet", ["up", "--help"]), ("tokenet", ["list", "--help"]),
        ("tokenet", ["describe", "--help"]), ("tokenet", ["call", "--help"]), ("tokenet", ["pki", "--help"]),
        ("tsp-node", ["--help"]),
        ("issuer-node", ["--help"]),
        ("wallet-node", ["--help"]),
    ])
    func theReadmeShowsTheCurrentHelp(program: String, arguments: [String]) async throws {
        let result = try await LaunchedProcess.run(program, arguments)
        #expect(result.status == 0)
        let help = result.stdout.trimmingCharacters(in: .newlines)
        #expect(!help.isEmpty)
        #expect(readme.contains(help + "\n"), "README.md does not show the output of \(program) \(arguments)")
    }

    /// The README shows the benchmarks' command lines rather than their whole help; each option the help lists
    /// still belongs on the README's line, or a reader never learns of it (`--data-dir` was missing).
    @Test(arguments: ["tokenet-broker-bench"])
    func theReadmesCommandLineHasEveryOption(program: String) async throws {
        let help = try await LaunchedProcess.run(program, ["--help"])
        #expect(help.status == 0)
        let options = Set(help.stdout.matches(of: /--[a-z][a-z-]*/).map { String($0.output) })
        #expect(options.count > 1, "\(program) --help lists no options:\n\(help.stdout)")
        let shown = readme.split(separator: "\n").filter { $0.contains(".build/release/\(program) ") }
        #expect(!shown.isEmpty, "README.md shows no command line of \(program)")
        for option in options.sorted() {
            #expect(shown.contains { $0.contains("[\(option) ") }, "README.md's \(program) line lacks \(option)")
        }
    }

    /// A reader runs the README's add-card lines against the demo issuer: a card number it does not hold (the
    /// help once showed 4111111111111111) is not eligible, and the accept-terms after it fails.
    @Test func theReadmesTypedInCardsAreTheDemoIssuers() throws {
        struct Fixture: Decodable {
            struct Card: Decodable {
                let pan: String
                let expiry: String
            }
            let cards: [Card]
        }
        let file = PackageRoot.url.appendingPathComponent("Tools/fixtures/issuer.json")
        let fixture = try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: file))
        let typedIn = readme.matches(of: /add-card \S+ --pan (\d+) --exp (\d\d\/\d\d)/)
        #expect(typedIn.count >= 4)
        for match in typedIn {
            let (pan, expiry) = (String(match.output.1), String(match.output.2))
            #expect(
                fixture.cards.contains { $0.pan == pan && $0.expiry == expiry },
                "README.md adds \(pan) \(expiry), which is no card of Tools/fixtures/issuer.json")
        }
    }

    /// A section added to a command's help starts after a blank line, not glued to the paragraph before it.
    @Test(arguments: ["wallet", "issuer", "issuer-app", "tsp"])
    func helpSectionsAreSeparatedByABlankLine(command: String) throws {
        let help = try LaunchedProcess.run("tokenet", [command, "--help"]).stdout
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated().dropFirst()
        where line.hasSuffix(":") && line.first?.isUppercase == true && line.split(separator: " ").count <= 4 {
            #expect(lines[index - 1].isEmpty, "\(command) --help: '\(line)' follows '\(lines[index - 1])'")
        }
    }
}
