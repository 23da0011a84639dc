/// Splits a command's arguments into options and operands by the one rule every `tokenet` command follows.
///
/// An option that takes a value takes the next argument as it, whatever it reads (`--reason --help` gives the reason
/// "--help"), but another of the command's valued options (`--pan --exp 12/29`: a value left out), or the text after
/// `=` (`--reason=X`, `-d={}`, also `--pan=--exp`); `--` ends the options. Asking for help
/// (`Subcommand.asksForHelp`) and every command's parser go through here with the same set of valued options, so
/// that they cannot disagree on where a value stands: when each parser walked the arguments its own way, `--help`
/// as a value was a request for help in one place and a value in the next.
struct ArgumentScanner {
    enum Item: Equatable {
        /// An option of `valued`, with its value.
        case valued(String, String)
        /// An argument starting with `-` that is no valued option: a switch, `--help`, or an unknown option, with
        /// what followed an `=` in it (`--json=yes`), which a switch refuses.
        case flag(String, inline: String?)
        /// `--`: every argument after it is an operand.
        case endOfOptions
        /// An argument that is not an option: one not starting with `-`, `-` alone, or any after `--`.
        case operand(String)
    }

    let arguments: [String]
    let command: String
    let valued: Set<String>
    /// The valued options that may be given more than once (`-H`); any other given twice is a usage error, as
    /// one of the two values would be dropped without a word (`--to A --to B` proxied to B alone).
    let repeatable: Set<String>
    private var index = 0
    private var optionsEnded = false
    private var given: Set<String> = []

    /// "; did you mean --name?" for `-name` (or `-name=…`) when `--name` is one of `options`, else "": Go tools
    /// such as grpcurl take options with one dash, and "unknown option '-plaintext'" alone sent a person to the help.
    static func singleDashHint(_ flag: String, options: Set<String>) -> String {
        guard flag.hasPrefix("-"), !flag.hasPrefix("--") else { return "" }
        let long = "-" + flag.prefix { $0 != "=" }
        return options.contains(long) ? "; did you mean \(long)?" : ""
    }

    /// `command` names the command in messages (`wallet add-card: --pan needs a value`).
    init(_ arguments: [String], command: String, valued: Set<String>, repeatable: Set<String> = []) {
        self.arguments = arguments
        self.command = command
        self.valued = valued
        self.repeatable = repeatable
    }

    /// The next item, or nil after the last; a valued option at the end with no value is a usage error.
    mutating func next() throws(CLIError) -> Item? {
        guard index < arguments.count else { return nil }
        let argument = arguments[index]
        index += 1
        if optionsEnded { return .operand(argument) }
        if argument == "--" {
            optionsEnded = true
            return .endOfOptions
        }
        guard argument.hasPrefix("-"), argument.count > 1 else { return .operand(argument) }
        var name = argument
        var inline: String?
        // `--name=VALUE` for any long option, and `-d=VALUE` for a short one that takes a value, as grpcurl's flags
        // take them; another short option keeps its `=` (`-x=1` is refused whole).
        if let equals = argument.firstIndex(of: "="),
            argument.hasPrefix("--") || valued.contains(String(argument[..<equals]))
        {
            name = String(argument[..<equals])
            inline = String(argument[argument.index(after: equals)...])
        }
        // Help given a value is said as such by every command: most refused it as "unknown option '--help'", which
        // read as if --help did not exist.
        if (name == "--help" && inline != nil) || name.hasPrefix("-h=") {
            throw CLIError(.usage, "\(command): \(name == "--help" ? "--help" : "-h") takes no value")
        }
        guard valued.contains(name) else { return .flag(name, inline: inline) }
        guard given.insert(name).inserted || repeatable.contains(name) else {
            throw CLIError(.usage, "\(command): \(name) may be given once")
        }
        if let inline { return .valued(name, inline) }
        guard index < arguments.count else { throw CLIError(.usage, "\(command): \(name) needs a value") }
        let value = arguments[index]
        // Taken as the value, it left its own option without one, and the refusal named that option instead
        // (`--pan --exp 12/29`: "--pan needs --exp MM/YY", though --exp was given).
        if valued.contains(value) {
            throw CLIError(
                .usage,
                "\(command): \(name) needs a value, but the option \(value) follows it; give \(name)'s value (or write "
                    + "\(name)=\(value) if that is the value)")
        }
        index += 1
        return .valued(name, value)
    }

    /// Whether `--help` or `-h` stands where an option may: not as an option's value nor after `--`.
    static func asksForHelp(_ arguments: [String], valued: Set<String>) -> Bool {
        var scanner = ArgumentScanner(arguments, command: "", valued: valued)
        while let item = try? scanner.next() {
            switch item {
            case .flag("--help", nil), .flag("-h", nil): return true
            case .endOfOptions: return false
            default: continue
            }
        }
        return false
    }
}
