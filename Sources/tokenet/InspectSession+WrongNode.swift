import TokenetRPC
import TokenetWire

extension InspectSession {
    /// The node's refusal of a method it does not serve, when that is because ADDR is another kind of node than the
    /// command talks to (`tokenet wallet cards` given the TSP's address): the node's "unknown method
    /// /tokenet.wallet.v1.WalletControl/ListCards" did not say that the address was the mistake. Which kind the node
    /// is comes from its reflection (the package of the services it serves); a node of the right kind that lacks the
    /// method (another build) keeps its own message. Still UNIMPLEMENTED (exit status 76).
    func wrongNode(behind error: any Error) async -> RPCError? {
        let prefix = "unknown method /"
        guard let error = error as? RPCError, error.code == .unimplemented, error.message.hasPrefix(prefix) else {
            return nil
        }
        return await wrongNode(calling: String(error.message.dropFirst(prefix.count - 1)))
    }

    /// The same judgement for a method the node's reflection does not describe (`/pkg.Service/Method` or
    /// `pkg.Service/Method`), before anything is sent: a scenario's `watch` opens no call without a described type.
    func wrongNode(calling path: String) async -> RPCError? {
        guard let service = path.split(separator: "/").first.map(String.init),
            Self.isKnown(String(path.trimmingPrefix("/")))
        else { return nil }
        return await wrongNode(for: service, code: .unimplemented, saying: "does not serve")
    }

    /// The same for a symbol `describe` was answered NOT_FOUND for (`tokenet.tsp.v1.DigitizeRequest` asked of a
    /// wallet-node): the node's "serves no service, method, message or enum named …" did not say which node does.
    func wrongNode(describing symbol: String) async -> RPCError? {
        let symbol = String(symbol.trimmingPrefix("/"))
        guard Self.isKnown(symbol) else { return nil }
        return await wrongNode(for: symbol, code: .notFound, saying: "does not describe")
    }

    /// Whether this build's schema has `symbol` (a service, a method as Service/Method or Service.Method, a message,
    /// an enum, or a package or the start of one): only then is another node named as the one that serves it. A
    /// name no node has (`tokenet.tsp.v1.TokenState`, which is `tokenet.card.v1`'s) was sent to the node its
    /// package named, which did not have it either.
    static func isKnown(_ symbol: String) -> Bool {
        if ProtoRegistry.service(named: symbol) != nil || ProtoRegistry.messageType(named: symbol) != nil
            || ProtoRegistry.enumType(named: symbol) != nil
        {
            return true
        }
        if let cut = symbol.lastIndex(where: { $0 == "/" || $0 == "." }),
            let service = ProtoRegistry.service(named: String(symbol[..<cut]))
        {
            return service.method(named: String(symbol[symbol.index(after: cut)...])) != nil
        }
        let package = symbol + "."
        return ProtoRegistry.services.contains { $0.name.hasPrefix(package) }
            || ProtoRegistry.messages.contains { $0.protoName.hasPrefix(package) }
            || ProtoRegistry.enums.contains { $0.protoName.hasPrefix(package) }
    }

    private func wrongNode(for symbol: String, code: StatusCode, saying verb: String) async -> RPCError? {
        guard let expected = Self.nodeName(serving: symbol) else { return nil }
        // Without an answer from reflection the kind is unknown: the node's own message stands.
        guard let services = try? await listServices() else { return nil }
        let actual = services.lazy.compactMap(Self.nodeName(serving:)).first
        guard actual != expected else { return nil }
        let kind = actual.map { "it is \(Self.article($0)) \($0)" } ?? "it serves no wallet, issuer or TSP service"
        let node = "\(Self.article(expected)) \(expected)"
        return RPCError(
            code, "\(options.address) \(verb) \(symbol), which \(node) serves; \(kind): give the address of \(node)")
    }

    /// The node that serves `service`, by its package: `tokenet.wallet.v1.WalletControl` is a wallet-node's.
    static func nodeName(serving service: String) -> String? {
        let parts = service.split(separator: ".")
        // `tokenet.issuer` too: a package named without its version is still the issuer-node's.
        guard parts.count >= 2, parts[0] == "tokenet" else { return nil }
        switch parts[1] {
        case "wallet": return "wallet-node"
        case "issuer": return "issuer-node"
        case "tsp": return "tsp-node"
        default: return nil
        }
    }

    /// "an issuer-node", "a wallet-node".
    private static func article(_ name: String) -> String { name.hasPrefix("issuer") ? "an" : "a" }
}
