/// One `tokenet` subcommand: its name, a one-line summary for `tokenet --help`, its own help text, and what it does.
struct Subcommand: Sendable {
    var name: String
    var summary: String
    var help: String
    /// The options that take their value as the next argument: that argument is the value even when it reads
    /// `--help` (`tokenet call ADDR M -d --help` sends "--help"), so it does not ask for help.
    var valuedOptions: Set<String> = []
    /// Runs with the arguments after the subcommand name and returns the exit status.
    var run: @Sendable ([String]) throws(CLIError) -> Int32
}

extension Subcommand {
    /// Whether `arguments` ask for this command's help: `--help` or `-h` where a flag may stand, not as the value
    /// of one of `valuedOptions` nor after `--` (an operand).
    func asksForHelp(_ arguments: [String]) -> Bool {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return false }
            if argument == "--help" || argument == "-h" { return true }
            index += valuedOptions.contains(argument) ? 2 : 1
        }
        return false
    }
}
