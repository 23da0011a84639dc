import TokenetNode
import TokenetRPC
import TokenetWire

extension CallCommand {
    /// The node's refusal of a method it does not serve, with the method meant when the node serves one by a close
    /// name (or where the names it serves are listed): the service without its package (`Health/Check`), another case
    /// (`HEALTH/check`) or a typing slip (`Chek`). The node's "unknown method /Health/Check" alone left the person to
    /// find the full name with `tokenet list`. Still UNIMPLEMENTED (exit status 76); nil when reflection does not
    /// answer.
    static func suggestion(for path: String, after error: RPCError, session: InspectSession) async -> RPCError? {
        let parts = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let services = try? await session.listServices() else { return nil }
        let (service, method) = (parts[0], parts[1])
        var candidates: [String] = []
        for name in services where name == service || isClose(name, service) {
            guard let described = try? await session.describe(name), let methods = described.service?.methods
            else { continue }
            let close = methods.filter { $0.name == method || isClose($0.name, method) }
            candidates += close.map { "\(name)/\($0.name)" }
        }
        let address = session.options.address
        guard !candidates.isEmpty else {
            guard services.contains(service) else {
                return RPCError(
                    .unimplemented,
                    "\(error.message); this node serves no service \(maskPAN(service)) "
                        + "(tokenet list \(address) lists them)"
                )
            }
            return RPCError(
                .unimplemented,
                "\(error.message); \(service) has no method of that name "
                    + "(tokenet list \(address) \(service) lists them)"
            )
        }
        let shown = candidates.count == 1 ? candidates[0] : candidates.joined(separator: " or ")
        return RPCError(.unimplemented, "\(error.message); did you mean \(shown)?")
    }

    /// Whether `name` is what `typed` may have meant: the same without a package or its start (`Health` for
    /// `tokenet.health.v1.Health`, `Health.Check` for `tokenet.health.v1.Health.Check`), the same in another case, or
    /// a letter or two apart (`Chek`, `Wacth`).
    static func isClose(_ name: String, _ typed: String) -> Bool {
        let short = name.split(separator: ".").last.map(String.init) ?? name
        let typedShort = typed.split(separator: ".").last.map(String.init) ?? typed
        if name.lowercased() == typed.lowercased() || short.lowercased() == typed.lowercased() { return true }
        // What comes before the last part must be as typed, or end the name's (`Health.Check` for a method of
        // `tokenet.health.v1.Health`): only the last part may be misspelled.
        if typed.contains(".") {
            let prefix = name.dropLast(short.count).lowercased()
            let typedPrefix = typed.dropLast(typedShort.count).lowercased()
            guard prefix == typedPrefix || prefix.hasSuffix("." + typedPrefix) else { return false }
        }
        // One slip in a name of four letters or fewer, two in a longer one: two slips leave little of a short name
        // (`Wxyz` is not `Watch`).
        let slips = typedShort.count <= 4 ? 1 : 2
        return EditDistance.between(short.lowercased(), typedShort.lowercased(), atMost: slips) <= slips
    }
}
