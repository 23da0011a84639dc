import TokenetNode
import TokenetRPC
import TokenetWire

/// `tokenet list ADDR [SERVICE]`: the services a node serves, or one service's methods with their types, as its
/// reflection service reports them.
enum ListCommand {
    static let subcommand = Subcommand(
        name: "list",
        summary: "List a node's services, or a service's methods (via reflection).",
        help: help,
        valuedOptions: InspectOptions.valuedFlags
    ) { arguments throws(CLIError) in
        let options = try InspectOptions(parsing: arguments, command: "list", operands: 0...1, named: ["SERVICE"])
        let named = try options.operands.first.map { (text) throws(CLIError) in
            try InspectSession.symbol(text, command: "list", named: "SERVICE")
        }
        return try InspectSession.run(options) { session in
            guard let named else {
                let services = try await session.askingReflection { try await session.listServices() }
                // One line per name: a line break in a name the node sent is escaped, not a line of its own.
                for name in services { printOut(shownName(name)) }
                return 0
            }
            // A package lists its services, as the listing of every service would show them.
            let inPackage = try await session.askingReflection { try await session.services(inPackage: named) }
            if !inPackage.isEmpty {
                for name in inPackage { printOut(shownName(name)) }
                return 0
            }
            let description: ReflectionV1.DescribeSymbolResponse
            do {
                description = try await session.askingReflection { try await session.describeSuggesting(named) }
            } catch let error as RPCError where error.code == .notFound {
                // Another node's service or package names the node that serves it, as describe and call do; a
                // package whose types this node's services use says so, where "serves no … message or enum named"
                // read as though describe would find nothing in it either.
                // Types first, as describe looks: the issuer's services use tokenet.tsp.v1's messages.
                let (messages, enums) = try await DescribeCommand.types(inPackage: named, session: session)
                guard messages.isEmpty && enums.isEmpty else {
                    throw RPCError(
                        .notFound,
                        "\(named) is a package with no service on this node; its services use \(messages.count) of its "
                            + "messages and \(enums.count) of its enums (tokenet describe \(session.options.address) "
                            + "\(named) lists them)")
                }
                if let wrongNode = await session.wrongNode(describing: named) { throw wrongNode }
                throw error
            }
            guard description.kind == .service, let methods = description.service?.methods else {
                throw CLIError(.usage, "list: \(maskPAN(description.name)) is not a service; try tokenet describe")
            }
            for method in methods {
                let request = (method.clientStreaming ? "stream " : "") + method.requestType
                let response = (method.serverStreaming ? "stream " : "") + method.responseType
                printOut(
                    shownName("\(description.name).\(method.name)(\(request)) returns (\(response))"))
            }
            return 0
        }
    }

    static let help = """
        Usage: tokenet list ADDR [SERVICE] [OPTIONS]

        Without SERVICE, prints the fully-qualified name of every service the node at ADDR (HOST:PORT) serves, one
        per line. With SERVICE, prints each of its methods with its request and response types; "stream" marks the
        side that sends several messages. With a package instead (tokenet.tsp.v1), prints the services in it.

        Options:
        \(InspectOptions.connectionHelp)

        Exit status: 0 on success; 64 + the status code when the node answers with an error (printed as "ERROR: CODE:
        message" on stderr); 1 when the node cannot be reached or a TLS file (--cacert, --cert, --key) cannot be used;
        2 for bad options.

        Example:
          tokenet list 127.0.0.1:7001 tokenet.health.v1.Health --cacert pki/ca.pem \\
              --cert pki/operator.pem --key pki/operator.key
        """
}
