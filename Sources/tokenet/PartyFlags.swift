import TokenetNode

/// The flags of a party command (`tokenet wallet add-card --pan …`), split from the connection flags that
/// `InspectOptions` parses, so the party commands share `--cacert/--cert/--key/--plaintext/--deadline/-H` with
/// `tokenet call` instead of copying them.
struct PartyFlags: Sendable, Equatable {
    /// Each valued flag given, by its name (`--pan`).
    var values: [String: String] = [:]
    /// The valued flags' names in the order they were given (`SecretInput` reads `-` values in that order).
    var order: [String] = []
    /// Each switch given (`--json`).
    var switches: Set<String> = []
    /// Everything else, in order: ADDR, operands and connection flags.
    var rest: [String] = []
    /// The command, for messages (`wallet add-card`).
    var command = ""
    /// The secret values given as `-`, read from standard input when first asked for (`secret(_:)`).
    let secrets = SecretInput.Values()

    /// Takes `valued` flags (`--pan VALUE` or `--pan=VALUE`) and `switches` out of `arguments`; a repeated flag or a
    /// missing value is a usage error naming the command (`ArgumentScanner`). The connection flags' values stay with their flags in
    /// `rest`, so that `--cacert --pan` names the file "--pan" for `InspectOptions` rather than giving `--pan`.
    init(
        parsing arguments: [String], command: String, valued: Set<String>, switches known: Set<String> = []
    ) throws(CLIError) {
        self.command = command
        var scanner = ArgumentScanner(
            arguments, command: command, valued: valued.union(InspectOptions.valuedFlags),
            repeatable: InspectOptions.repeatableFlags)
        while let item = try scanner.next() {
            switch item {
            case .valued(let name, let value) where valued.contains(name):
                // An empty value is a slip (a variable not set): it reached the node as a field left out ("merchant
                // is required", status 67), or, for a filter, listed everything as if the flag were not there.
                guard !value.isEmpty else {
                    throw CLIError(.usage, "\(command): \(name) is empty: give it a value, or leave the flag out")
                }
                values[name] = value
                order.append(name)
            // Kept in one piece, so that a value that looks like an option (`--cacert=--key`) stays a value.
            case .valued(let name, let value): rest.append("\(name)=\(value)")
            case .flag(let name, let inline) where known.contains(name):
                guard inline == nil else { throw CLIError(.usage, "\(command): \(name) takes no value") }
                switches.insert(name)
            case .flag(let name, _)
            where !ArgumentScanner.singleDashHint(name, options: valued.union(known)).isEmpty:
                throw CLIError(
                    .usage,
                    "\(command): unknown option '\(maskPAN(String(name.prefix { $0 != "=" })))'"
                        + ArgumentScanner.singleDashHint(name, options: valued.union(known)))
            case .flag(let name, let inline): rest.append(inline.map { "\(name)=\($0)" } ?? name)
            case .endOfOptions: rest.append("--")
            case .operand(let operand): rest.append(operand)
            }
        }
    }

    /// The flag's value as given: `-` for a secret to be read from standard input (whether it was given is all a
    /// check of the command line needs; `secret(_:)` reads it).
    subscript(_ name: String) -> String? { values[name] }

    /// The value of a secret flag (`--pan`, `--cvc`, `--pin`, `--code`): read from standard input when given as `-`
    /// (all such flags' values at once, in the order given, the first time one is asked for), else as given. Called
    /// once the command line is otherwise checked, so that nothing is typed for a command that is refused.
    private func secret(_ name: String) throws(CLIError) -> String? {
        guard values[name] == "-", SecretInput.secrets[name] != nil else { return values[name] }
        return try secrets.value(of: name, in: self)
    }

    /// `secret(_:)`, once the TLS files `options` names are looked at as the connection will look at them: a file
    /// that cannot serve is named before anything is typed, not after.
    func secret(_ name: String, connectingWith options: InspectOptions) throws(CLIError) -> String? {
        if values[name] == "-", SecretInput.secrets[name] != nil { try InspectSession.precheckFiles(options) }
        return try secret(name)
    }

    /// `secret(_:connectingWith:)` for a secret the command sends in its request. With `--plaintext` it is refused
    /// before anything is read or sent: it would cross the network unencrypted, to a node that takes these commands
    /// only from a client certificate (over plaintext it answered PERMISSION_DENIED, with the secret received).
    func secret(_ name: String, sentWith options: InspectOptions) throws(CLIError) -> String? {
        if options.transport == .plaintext, values[name] != nil {
            throw CLIError(
                .usage,
                "\(command): --plaintext would send the \(SecretInput.secrets[name] ?? name) unencrypted, and a node "
                    + "takes this command only from a client certificate; drop --plaintext to connect over mutual TLS")
        }
        return try secret(name, connectingWith: options)
    }

    static func == (lhs: PartyFlags, rhs: PartyFlags) -> Bool {
        lhs.values == rhs.values && lhs.switches == rhs.switches && lhs.rest == rhs.rest && lhs.order == rhs.order
            && lhs.command == rhs.command
    }

    var json: Bool { switches.contains("--json") }
}

/// One action of a party command group (`add-card` of `tokenet wallet`), with the flags it takes besides the
/// connection flags: its run gets them parsed, and the group's help check scans with the same `valued`.
struct PartyAction: Sendable {
    var name: String
    var valued: Set<String> = []
    var switches: Set<String> = ["--json"]
    var run: @Sendable (_ flags: PartyFlags, _ command: String) throws(CLIError) -> Int32
}

/// A command whose first argument names an action: `tokenet wallet add-card …`, `tokenet issuer cards …`.
enum PartyCommandGroup {
    static func subcommand(name: String, summary: String, help: String, actions: [PartyAction]) -> Subcommand {
        let actionValued = Dictionary(actions.map { ($0.name, $0.valued) }, uniquingKeysWith: { $0.union($1) })
        return Subcommand(
            name: name, summary: summary, help: help, valuedOptions: InspectOptions.valuedFlags,
            actionValuedOptions: actionValued
        ) { arguments throws(CLIError) in
            let names = actions.map(\.name).joined(separator: ", ")
            guard let first = arguments.first else {
                throw CLIError(.usage, "\(name): missing action (\(names))")
            }
            guard let action = actions.first(where: { $0.name == first }) else {
                throw CLIError(.usage, "\(name): unknown action '\(first)' (actions: \(names))")
            }
            let command = "\(name) \(first)"
            let flags = try PartyFlags(
                parsing: Array(arguments.dropFirst()), command: command, valued: action.valued,
                switches: action.switches)
            return try action.run(flags, command)
        }
    }
}
