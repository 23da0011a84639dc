/// One `tokenet` subcommand: its name, a one-line summary for `tokenet --help`, its own help text, and what it does.
struct Subcommand: Sendable {
    var name: String
    var summary: String
    var help: String
    /// The options that take their value as the next argument: the parser scans with the same set
    /// (`ArgumentScanner`), so such a value is that value even when it reads `--help` (`tokenet call ADDR M -d --help`
    /// sends "--help") and does not ask for help.
    var valuedOptions: Set<String> = []
    /// A party command's further valued options, by the action that takes them (`add-card`: `--pan`, …).
    var actionValuedOptions: [String: Set<String>] = [:]
    /// Runs with the arguments after the subcommand name and returns the exit status.
    var run: @Sendable ([String]) throws(CLIError) -> Int32
}

extension Subcommand {
    /// Whether `arguments` ask for this command's help: `--help` or `-h` where a flag may stand, not as the value
    /// of one of `valuedOptions` (with the action's own, for a party command) nor after `--` (an operand).
    func asksForHelp(_ arguments: [String]) -> Bool {
        let action = arguments.first.flatMap { actionValuedOptions[$0] } ?? []
        return ArgumentScanner.asksForHelp(arguments, valued: valuedOptions.union(action))
    }
}
