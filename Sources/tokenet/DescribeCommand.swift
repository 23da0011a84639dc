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
                guard !services.isEmpty else {
                    if try await printTypes(inPackage: symbol, session: session) { return 0 }
                    throw await session.wrongNode(describing: symbol) ?? error
                }
                printOut(
                    "\(shownName(symbol)) is a package, with \(services.count) service\(services.count == 1 ? "" : "s"):"
                )
                for service in services { printOut("  " + shownName(service)) }
                printOut("(tokenet describe \(session.options.address) SERVICE describes one)")
                return 0
            }
            printOut(SymbolDescriptionText.render(description))
            return 0
        }
    }

    /// Lists the messages and enums of `package` that the node's services use, for a package with no service of
    /// its own (`tokenet.card.v1`, whose types the TSP's and the wallet's methods carry): it was NOT_FOUND, though
    /// each of its types could be described by name. False when the services use none.
    static func printTypes(inPackage package: String, session: InspectSession) async throws -> Bool {
        let (messages, enums) = try await types(inPackage: package, session: session)
        guard !messages.isEmpty || !enums.isEmpty else { return false }
        printOut("\(shownName(package)) is a package with no service on this node; its services use:")
        for message in messages.sorted() { printOut("  message " + shownName(message)) }
        for name in enums.sorted() { printOut("  enum " + shownName(name)) }
        printOut("(tokenet describe \(session.options.address) NAME describes one)")
        return true
    }

    /// The messages and enums of `package` that the node's services use (none for a name that is no package).
    static func types(inPackage package: String, session: InspectSession) async throws
        -> (messages: Set<String>, enums: Set<String>)
    {
        guard !package.isEmpty, !package.hasSuffix("."), !package.contains("/") else { return ([], []) }
        var messages: Set<String> = []
        var enums: Set<String> = []
        for service in try await session.askingReflection({ try await session.listServices() }) {
            let description = try await session.askingReflection { try await session.describe(service) }
            messages.formUnion(description.messages.map(\.name).filter { $0.hasPrefix(package + ".") })
            enums.formUnion(description.enums.map(\.name).filter { $0.hasPrefix(package + ".") })
        }
        return (messages, enums)
    }

    static let help = """
        Usage: tokenet describe ADDR SYMBOL [OPTIONS]

        Prints SYMBOL as the node at ADDR (HOST:PORT) describes it, in .proto syntax, followed by every message and
        enum it uses: enough to write a request for tokenet call. SYMBOL is a service (tokenet.health.v1.Health),
        a method (tokenet.health.v1.Health.Check or /tokenet.health.v1.Health/Check), a message or an enum; a
        package (tokenet.tsp.v1) lists its services, and one without a service on the node (tokenet.card.v1)
        the messages and enums of it that the node's services use. A symbol of another node's API is answered
        NOT_FOUND with the node that serves it.
        Fields whose JSON name differs from their name show it as [json_name = "..."], each symbol shows
        the comment written above it in its .proto file, and a method only some roles may call names them, as
        its .proto does: option (tokenet.rpc.v1.allowed_roles) = "wallet"; one that changes nothing (a listing,
        a look-up) says so: option idempotency_level = NO_SIDE_EFFECTS;

        Options:
        \(InspectOptions.connectionHelp)

        Exit status: 0 on success; 64 + the status code when the node answers with an error (64 + 5 = 69 for an
        unknown symbol); 1 when the node cannot be reached or a TLS file (--cacert, --cert, --key) cannot be used; 2
        for bad options.
        """
}
