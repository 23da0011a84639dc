import TokenetRPC

extension IssuerError {
    /// The status an operator's call fails with; storage and key failures keep their cause local.
    var rpcError: RPCError {
        switch code {
        case .invalidArgument: RPCError(.invalidArgument, message)
        case .notFound: RPCError(.notFound, message)
        case .alreadyExists: RPCError(.alreadyExists, message)
        case .unauthenticated: RPCError(.unauthenticated, message)
        case .locked: RPCError(.resourceExhausted, message)
        case .failedPrecondition: RPCError(.failedPrecondition, message)
        case .unavailable: RPCError(.unavailable, message)
        // The cause stays local: the node's server logs it at error level (`RPCServer.failureLog`).
        case .fixture, .storage, .keys, .cardData: RPCError(.internal, "the issuer failed: \(message)", cause: self)
        }
    }

    /// Runs an operator's call body, turning issuer errors into their status.
    static func mapping<T>(_ body: () async throws(IssuerError) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw error.rpcError
        }
    }
}
