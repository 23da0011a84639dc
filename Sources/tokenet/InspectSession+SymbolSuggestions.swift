import TokenetRPC
import TokenetWire

extension InspectSession {
    /// `describe(symbol)`, its NOT_FOUND naming the symbols meant when the node serves some by a close name.
    func describeSuggesting(_ symbol: String) async throws -> ReflectionV1.DescribeSymbolResponse {
        do {
            return try await describe(symbol)
        } catch let error as RPCError where error.code == .notFound {
            throw await suggestion(for: symbol, after: error) ?? error
        }
    }

    /// A fully-qualified name as descriptors write it (`.tokenet.health.v1.Health`, the form of a field's
    /// `type_name`), without its leading dot: reflection names symbols without it. Only a dot before a letter is
    /// taken for one (`./x` or `..x` are no such names).
    static func withoutLeadingDot(_ symbol: String) -> String {
        guard symbol.hasPrefix("."), symbol.dropFirst().first?.isLetter == true else { return symbol }
        return String(symbol.dropFirst())
    }

    /// The symbol `text` names for `command`: without a leading dot, and refused like an empty one when it is dots
    /// alone, which name nothing (the node's INVALID_ARGUMENT said so only after connecting).
    static func symbol(_ text: String, command: String, named name: String) throws(CLIError) -> String {
        guard !text.allSatisfy({ $0 == "." }) else { throw CLIError(.usage, "\(command): \(name) is empty") }
        return withoutLeadingDot(text)
    }

    /// The services the node serves in `package` (`tokenet.tsp.v1`) or in a package under it, sorted.
    func services(inPackage package: String) async throws -> [String] {
        guard !package.isEmpty, !package.hasSuffix(".") else { return [] }
        return try await listServices().filter { $0.hasPrefix(package + ".") }.sorted()
    }

    /// The node's NOT_FOUND for a symbol `describe` or `list` asked about, with the symbols it serves by a close name:
    /// a service or method without its package (`Health`, `Health.Check`), another case, or a typing slip, in a
    /// package's name too. The node's "serves no … named 'Health'" alone left the person to find the full name with
    /// `tokenet list`. Still NOT_FOUND (exit status 69); nil when nothing is close or reflection does not answer.
    func suggestion(for symbol: String, after error: RPCError) async -> RPCError? {
        guard let services = try? await listServices() else { return nil }
        // A method may be written as a path (`/pkg.Service/Method`); reflection's names join it with a dot.
        let typed = String(symbol.trimmingPrefix("/")).replacing("/", with: ".")
        var names = Set(services)
        // The packages the services are in, and those above them (`tokenet.tsp.v1`, `tokenet.tsp`), for a qualified
        // name: `list` and `describe` take a package too, and `tokenet.ts` is as likely a slip as `Helth`. A bare
        // name (`Health`) is a service's or a message's, not the package's `tokenet.health`.
        if typed.contains(".") {
            for service in services {
                let parts = service.split(separator: ".", omittingEmptySubsequences: false)
                for count in parts.indices.dropFirst() { names.insert(parts[..<count].joined(separator: ".")) }
            }
        }
        for service in services {
            guard let described = try? await describe(service) else { continue }
            names.formUnion(described.service?.methods.map { "\(service).\($0.name)" } ?? [])
            names.formUnion(described.messages.map(\.name))
            names.formUnion(described.enums.map(\.name))
        }
        let close = names.filter { CallCommand.isClose($0, typed) }.sorted()
        // More than a few are no suggestion: `Check` is a method of several services.
        guard !close.isEmpty, close.count <= Self.mostSuggestions else { return nil }
        return RPCError(error.code, "\(error.message); did you mean \(close.joined(separator: " or "))?")
    }

    /// The most close names a suggestion lists.
    static let mostSuggestions = 3
}
