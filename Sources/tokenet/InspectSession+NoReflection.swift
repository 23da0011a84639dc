import TokenetRPC
import TokenetWire

extension InspectSession {
    /// Runs `body`, which asks the node's reflection service, saying so when the node has none: its answer,
    /// "unknown method /tokenet.reflection.v1.Reflection/ListServices", named a method `list` or `describe` had not
    /// been asked to call, and not what was missing. Still UNIMPLEMENTED (exit status 76).
    func askingReflection<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as RPCError
            where error.code == .unimplemented
            && error.message.hasPrefix("unknown method /\(ReflectionV1.Reflection.serviceName)/")
        {
            throw RPCError(
                .unimplemented,
                "\(options.address) has no reflection service (\(ReflectionV1.Reflection.serviceName)), so it cannot "
                    + "list or describe what it serves; tokenet call still reaches the methods this build of tokenet "
                    + "knows")
        }
    }
}
