/// The flags of a party command (`tokenet wallet add-card --pan …`), split from the connection flags that
/// `InspectOptions` parses, so the party commands share `--cacert/--cert/--key/--plaintext/--deadline/-H` with
/// `tokenet call` instead of copying them.
struct PartyFlags: Sendable, Equatable {
    /// Each valued flag given, by its name (`--pan`).
    var values: [String: String] = [:]
    /// Each switch given (`--json`).
    var switches: Set<String> = []
    /// Everything else, in order: ADDR, operands and connection flags.
    var rest: [String] = []

    /// Takes `valued` flags (`--pan VALUE` or `--pan=VALUE`) and `switches` out of `arguments`; a repeated flag or a
    /// missing value is a usage error naming the command.
    init(
        parsing arguments: [String], command: String, valued: Set<String>, switches known: Set<String> = []
    ) throws(CLIError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                rest += arguments[(index - 1)...]
                break
            }
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            if known.contains(name) {
                guard inline == nil else { throw CLIError(.usage, "\(command): \(name) takes no value") }
                switches.insert(name)
            } else if valued.contains(name) {
                guard values[name] == nil else { throw CLIError(.usage, "\(command): \(name) may be given once") }
                if let inline {
                    values[name] = inline
                } else {
                    guard index < arguments.count else { throw CLIError(.usage, "\(command): \(name) needs a value") }
                    values[name] = arguments[index]
                    index += 1
                }
            } else {
                rest.append(argument)
            }
        }
    }

    subscript(_ name: String) -> String? { values[name] }

    var json: Bool { switches.contains("--json") }
}

/// One action of a party command group (`add-card` of `tokenet wallet`).
struct PartyAction: Sendable {
    var name: String
    var run: @Sendable (_ arguments: [String], _ command: String) throws(CLIError) -> Int32
}

/// A command whose first argument names an action: `tokenet wallet add-card …`, `tokenet issuer cards …`.
enum PartyCommandGroup {
    static func subcommand(name: String, summary: String, help: String, actions: [PartyAction]) -> Subcommand {
        Subcommand(
            name: name, summary: summary, help: help, valuedOptions: InspectOptions.valuedFlags
        ) { arguments throws(CLIError) in
            let names = actions.map(\.name).joined(separator: ", ")
            guard let first = arguments.first else {
                throw CLIError(.usage, "\(name): missing action (\(names))")
            }
            guard let action = actions.first(where: { $0.name == first }) else {
                throw CLIError(.usage, "\(name): unknown action '\(first)' (actions: \(names))")
            }
            return try action.run(Array(arguments.dropFirst()), "\(name) \(first)")
        }
    }
}
