import TokenetNode
import TokenetRPC
import TokenetWire

/// A method to call with the message types to encode its requests and decode its responses.
struct CallTarget: Sendable {
    var path: String
    var kind: RPCKind
    var request: any ProtoMessage.Type
    var response: any ProtoMessage.Type

    /// Asks the node's reflection service for `path`'s types; a node without reflection falls back to the methods
    /// this build knows. Returns nil when reflection says the node does not serve the method.
    static func resolve(_ path: String, session: InspectSession) async throws -> CallTarget? {
        let description: ReflectionV1.DescribeSymbolResponse
        do {
            description = try await session.describe(path)
        } catch let error as RPCError where error.code == .notFound {
            return nil
        } catch let error as RPCError where error.code == .unimplemented {
            return try local(path, address: "\(session.options.address)")
        }
        guard description.kind == .method, let method = description.service?.methods.first else { return nil }
        return CallTarget(
            path: method.path,
            kind: RPCKind(clientStreams: method.clientStreaming, serverStreams: method.serverStreaming),
            request: try known(method.requestType, path: path),
            response: try known(method.responseType, path: path))
    }

    /// The generated type for a message the node named; the JSON codec needs one. The name is the node's, shown as
    /// its status messages are (`shownStatusMessage`): whatever answers at the address may describe any method, as
    /// typed, card number included, with a type name of megabytes.
    private static func known(_ name: String, path: String) throws(CLIError) -> any ProtoMessage.Type {
        guard let type = ProtoRegistry.messageType(named: name) else {
            throw CLIError(
                .connection,
                "\(maskPAN(path)) uses \(shownStatusMessage(name)), which this build of tokenet does not know; use a "
                    + "newer tokenet")
        }
        return type
    }

    private static func local(_ path: String, address: String) throws(CLIError) -> CallTarget {
        guard let target = known(path) else {
            throw CLIError(
                .connection,
                "\(address) has no reflection service and this build of tokenet does not know \(maskPAN(path)), "
                    + "so its request type is unknown" + knownSuggestion(for: path))
        }
        return target
    }

    /// The methods this build knows by a name close to `path`'s (`Bench/Ech` for `tokenet.bench.v1.Bench/Echo`), as
    /// "; did you mean …?", or nothing: without reflection, what the build knows is all there is to go by.
    static func knownSuggestion(for path: String) -> String {
        let parts = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { return "" }
        var close: [String] = []
        for service in ProtoRegistry.services where CallCommand.isClose(service.name, parts[0]) {
            close += service.methods.filter { CallCommand.isClose($0.name, parts[1]) }.map {
                "\(service.name)/\($0.name)"
            }
        }
        guard !close.isEmpty, close.count <= InspectSession.mostSuggestions else { return "" }
        return "; did you mean \(close.joined(separator: " or "))?"
    }

    /// The method at `path` (`/pkg.Service/Method`) as this build's generated code describes it, if it knows it.
    static func known(_ path: String) -> CallTarget? {
        let parts = path.dropFirst().split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let method = ProtoRegistry.service(named: parts[0])?.method(named: parts[1]) else {
            return nil
        }
        return CallTarget(path: path, kind: method.kind, request: method.request, response: method.response)
    }
}

extension RPCKind {
    init(clientStreams: Bool, serverStreams: Bool) {
        self =
            switch (clientStreams, serverStreams) {
            case (false, false): .unary
            case (false, true): .serverStreaming
            case (true, false): .clientStreaming
            case (true, true): .bidirectionalStreaming
            }
    }
}
