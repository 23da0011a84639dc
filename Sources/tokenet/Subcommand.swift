/// One `tokenet` subcommand: its name, a one-line summary for `tokenet --help`, its own help text, and what it does.
struct Subcommand: Sendable {
    var name: String
    var summary: String
    var help: String
    /// Runs with the arguments after the subcommand name and returns the exit status.
    var run: @Sendable ([String]) throws(CLIError) -> Int32
}
