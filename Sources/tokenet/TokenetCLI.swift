import Foundation
import TokenetNode
import TokenetWire

/// Dispatches `tokenet SUBCOMMAND [ARGS]`.
///
/// `--help` works at both levels (`tokenet --help`, `tokenet demo --help`, `tokenet help demo`) and prints to stdout
/// with status 0, where a flag may stand but not as an option's value (`Subcommand.asksForHelp`); no command at all
/// prints the same overview to stderr with status 2, and an unknown subcommand lists the known ones instead of
/// guessing.
enum TokenetCLI {
    static let subcommands: [Subcommand] = [
        DemoCommand.subcommand, ListCommand.subcommand, DescribeCommand.subcommand, CallCommand.subcommand,
        WalletCommand.subcommand, IssuerCommand.subcommand, IssuerAppCommand.subcommand, TSPCommand.subcommand,
        ProxyCommand.subcommand, DecodeCommand.subcommand, ScenarioCommand.subcommand, UpCommand.subcommand,
        PKICommand.subcommand, versionCommand, helpCommand,
    ]

    static func main(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            // A bad invocation, like an unknown command: the usage goes to stderr, stdout stays empty.
            printError(overview)
            return 2
        }
        // The command whose options a usage mistake is about: its own help lists them, the overview does not.
        var usageHelp = "tokenet --help"
        do throws(CLIError) {
            if let index = firstArgumentNotUTF8() {
                let shown = index <= arguments.count ? " '\(maskPAN(arguments[index - 1]))'" : ""
                throw CLIError(.usage, "argument \(index)\(shown) is not UTF-8 text")
            }
            switch first {
            case "--help", "-h":
                // `tokenet --help wallet` as `tokenet help wallet`; what follows was dropped without a word.
                return try helpCommand.run(Array(arguments.dropFirst()))
            case "--version":
                // What follows is refused as `tokenet version` refuses it, not dropped without a word.
                return try versionCommand.run(Array(arguments.dropFirst()))
            case let option where option.hasPrefix("--help=") || option.hasPrefix("-h="):
                throw CLIError(.usage, "\(option.hasPrefix("-h=") ? "-h" : "--help") takes no value")
            default:
                guard let command = subcommands.first(where: { $0.name == first }) else {
                    throw CLIError(.usage, unknownCommand(first))
                }
                let rest = Array(arguments.dropFirst())
                // `tokenet help TOPIC` is about the commands: the overview lists them.
                if command.name != Self.helpCommand.name { usageHelp = "tokenet \(command.name) --help" }
                if command.asksForHelp(rest) {
                    printOut(command.help)
                    return 0
                }
                return try command.run(rest)
            }
        } catch {
            // Masked as a whole, whatever each message quotes of what was typed (a --reason, a --language, a file
            // path, an action): the messages that forgot to printed a card number given by mistake in clear.
            let message = maskPAN(error.description)
            printError("tokenet: \(error.code == .usage ? shownUsageError(message) : message)")
            if error.code == .usage { printError("Run '\(usageHelp)' for usage.") }
            return error.exitStatus
        }
    }

    /// The position (from 1) of the first argument of this process's command line that is not UTF-8. Swift's
    /// `CommandLine.arguments` replaces such bytes with U+FFFD, so `-d` would send, and a path would name, text the
    /// user never wrote; standard input is refused for the same reason.
    static func firstArgumentNotUTF8() -> Int? {
        (1..<Int(CommandLine.argc)).first { index in
            CommandLine.unsafeArgv[index].map { String(validatingCString: $0) == nil } ?? false
        }
    }

    static var commandNames: String { subcommands.map(\.name).joined(separator: ", ") }

    /// An unknown command, with the one a slip of a letter or two away (`lst` for `list`), as options get.
    static func unknownCommand(_ typed: String) -> String {
        let slips = typed.count <= 4 ? 1 : 2
        let close = subcommands.map(\.name).filter {
            EditDistance.between($0, typed.lowercased(), atMost: slips) <= slips
        }
        let hint = close.count == 1 ? "; did you mean '\(close[0])'?" : ""
        return "unknown command '\(maskPAN(typed))'\(hint) (commands: \(commandNames))"
    }

    static var overview: String {
        let width = subcommands.map(\.name.count).max() ?? 0
        let rows = subcommands.map {
            "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.summary
        }
        return
            ([
                "tokenet: drive a local Tokenet sandbox (wallet, issuer and TSP nodes).",
                "",
                "Usage: tokenet COMMAND [OPTIONS]",
                "",
                "Commands:",
            ] + rows + ["", "Run 'tokenet COMMAND --help' for a command's options."]).joined(separator: "\n")
    }

    static let versionCommand = Subcommand(
        name: "version",
        summary: "Print the version of tokenet and of the wire protocol.",
        help: "Usage: tokenet version\n\nPrints the release and the wire protocol version."
    ) { arguments throws(CLIError) in
        if let extra = arguments.first {
            throw CLIError(.usage, "version: unexpected argument '\(maskPAN(extra))'")
        }
        printOut(TokenetVersion.line(for: "tokenet"))
        return 0
    }

    static let helpCommand = Subcommand(
        name: "help",
        summary: "Show help for tokenet or for one command.",
        help: "Usage: tokenet help [COMMAND]"
    ) { arguments throws(CLIError) in
        guard let name = arguments.first else {
            printOut(overview)
            return 0
        }
        guard let command = subcommands.first(where: { $0.name == name }) else {
            throw CLIError(.usage, unknownCommand(name))
        }
        if arguments.count > 1 {
            let rest = arguments.dropFirst().map(maskPAN).joined(separator: " ")
            throw CLIError(
                .usage,
                "help takes one command, and '\(rest)' followed it; for more about it, run 'tokenet \(name) \(rest) --help'"
            )
        }
        printOut(command.help)
        return 0
    }
}

/// Writes a line to stdout unbuffered, so it interleaves correctly with the nodes' output. Control characters
/// other than line breaks and tabs are written escaped (`escapingControls`).
func printOut(_ text: String) { StandardStream.output.write(line: escapingControls(text, keepingLines: true)) }

func printError(_ text: String) { StandardStream.error.write(line: escapingControls(text, keepingLines: true)) }

/// A name a node sent (a service, a method, a message or a field, a comment), or an id the user gave that a line
/// echoes, as the CLI prints it: kept on its line, and with a card number in it masked, as in the node's error
/// messages.
func shownName(_ text: String) -> String { escapingControls(maskPAN(text)) }

/// `text` with its control and invisible characters (`Unicode.Scalar.isInvisibleInText`) written as `\u{1B}`. Much
/// of what the CLI prints comes from a node — T&C text, reasons, merchant names, message titles, status messages
/// that quote the request, the names reflection lists — and an escape sequence in it would act on the terminal
/// (clear it, recolour it, retitle the window), a carriage return would overwrite the line before it, and a
/// bidirectional override or a zero-width space would make a name read as another. With `keepingLines`, line breaks
/// and tabs stay: the CLI's own tables and blocks need them; without, a line break is escaped too, so that one
/// message cannot print a line of its own. JSON the CLI prints has these characters as JSON escapes already.
func escapingControls(_ text: String, keepingLines: Bool = false) -> String {
    func escaped(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isInvisibleInText else { return false }
        return !(keepingLines && (scalar == "\n" || scalar == "\t"))
    }
    guard text.unicodeScalars.contains(where: escaped) else { return text }
    var result = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        if escaped(scalar) {
            result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
        } else {
            result.append(scalar)
        }
    }
    return String(result)
}

/// The most characters of a peer's status message the CLI prints.
let statusMessageLimit = 1024

/// A status message from a peer as the CLI prints it: with a card number masked (`maskPAN`), at most
/// `statusMessageLimit` characters of it followed by how many more there were, and its control characters, line
/// breaks among them, escaped (`escapingControls`). A message comes from whatever answers at the address, and a frame
/// may hold megabytes of one: printed whole, a hostile or broken server could flood the terminal, print lines of its
/// own, or have a card number the caller sent echoed back. Goaway reasons are cut in the RPC layer the same way.
/// Masked before it is cut, so that a cut cannot leave a card number's first digits unmasked.
func shownStatusMessage(_ message: String) -> String {
    shownCut(maskPAN(message))
}

/// A usage error as the CLI prints it: on one line, its control characters and line breaks escaped, and at most
/// `statusMessageLimit` characters of it. Such an error quotes what was typed (a `--deadline` of 90,000 characters
/// was echoed whole; a line break in one split the message), already with any card number masked where it quotes it.
func shownUsageError(_ message: String) -> String {
    shownCut(message)
}

/// `text` escaped (`escapingControls`) and cut to `statusMessageLimit` characters, followed by how many there were.
private func shownCut(_ text: String) -> String {
    let scalars = text.unicodeScalars
    guard scalars.count > statusMessageLimit else { return escapingControls(text) }
    let kept = String(String.UnicodeScalarView(scalars.prefix(statusMessageLimit)))
    return escapingControls(kept)
        + "... (\(scalars.count) characters, the last \(scalars.count - statusMessageLimit) cut)"
}
