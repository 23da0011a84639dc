import TokenetRPC
import TokenetWire

/// `tokenet describe ADDR SYMBOL`: a `.proto`-like listing of a service, method, message or enum, with every message
/// and enum it uses, as the node's reflection service reports them.
enum DescribeCommand {
    static let subcommand = Subcommand(
        name: "describe",
        summary: "Describe a service, method, message or enum of a node (via reflection).",
        help: help,
        valuedOptions: InspectOptions.valuedFlags
    ) { arguments throws(CLIError) in
        let options = try InspectOptions(parsing: arguments, command: "describe", operands: 1...1, named: ["SYMBOL"])
        let symbol = try InspectSession.symbol(options.operands[0], command: "describe", named: "SYMBOL")
        return try InspectSession.run(options) { session in
            let description: ReflectionV1.DescribeSymbolResponse
            do {
                description = try await session.askingReflection { try await session.describeSuggesting(symbol) }
            } catch let error as RPCError where error.code == .notFound {
                // A package is no symbol reflection describes, but its services are what was meant.
                let services = try await session.askingReflection { try await session.services(inPackage: symbol) }
                guard !services.isEmpty else { throw error }
                printOut(
                    "\(escapingControls(symbol)) is a package, with \(services.count) service\(services.count == 1 ? "" : "s"):"
                )
                for service in services { printOut("  " + escapingControls(service)) }
                printOut("(tokenet describe \(session.options.address) SERVICE describes one)")
                return 0
            }
            printOut(SymbolDescriptionText.render(description))
            return 0
        }
    }

    static let help = """
        Usage: tokenet describe ADDR SYMBOL [OPTIONS]

        Prints SYMBOL as the node at ADDR (HOST:PORT) describes it, in .proto syntax, followed by every message and
        enum it uses: enough to write a request for tokenet call. SYMBOL is a service (tokenet.health.v1.Health),
        a method (tokenet.health.v1.Health.Check or /tokenet.health.v1.Health/Check), a message or an enum; a
        package (tokenet.tsp.v1) lists its services.
        Fields whose JSON name differs from their name show it as [json_name = "..."].

        Options:
        \(InspectOptions.connectionHelp)

        Exit status: 0 on success; 64 + the status code when the node answers with an error (64 + 5 = 69 for an
        unknown symbol); 1 when the node cannot be reached; 2 for bad options.
        """
}
