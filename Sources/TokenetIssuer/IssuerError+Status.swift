import TokenetRPC
import TokenetStorage

extension IssuerError: RPCErrorConvertible {
    /// The status an operator's call fails with; storage and key failures keep their cause local.
    public var rpcError: RPCError {
        switch code {
        case .invalidArgument: RPCError(.invalidArgument, message)
        case .notFound: RPCError(.notFound, message)
        case .alreadyExists: RPCError(.alreadyExists, message)
        case .unauthenticated: RPCError(.unauthenticated, message)
        case .locked: RPCError(.resourceExhausted, message)
        case .failedPrecondition: RPCError(.failedPrecondition, message)
        case .unavailable: RPCError(.unavailable, message)
        case .tspExhausted: RPCError(.resourceExhausted, message)
        case .tspDidNotAnswer: RPCError(.deadlineExceeded, message)
        // A full disk is the one storage failure the caller can do something about (RESOURCE_EXHAUSTED, as gRPC has
        // it for a file system out of space); the node's log still gets the cause (`ServerFailure`).
        case .storage where (cause as? StorageError)?.code == .full:
            RPCError(
                .resourceExhausted,
                "\(message): the issuer's disk is full; free space on the disk that holds its data directory, then "
                    + "try again",
                cause: ServerFailure(self))
        // A disk or directory that refuses writes is the operator's to mend, not a fault of the issuer's own.
        case .storage where (cause as? StorageError)?.isUnwritableStorage == true:
            RPCError(
                .unavailable,
                "\(message): \((cause as? StorageError)?.unwritableStorageAdvice(of: "the issuer") ?? "")",
                cause: ServerFailure(self))
        case .storage where (cause as? StorageError)?.isBusy == true:
            RPCError(
                .unavailable, "\(message): \((cause as? StorageError)?.busyAdvice(of: "the issuer") ?? "")",
                cause: ServerFailure(self))
        // A damaged page fails the same way at every retry.
        case .storage where (cause as? StorageError)?.code == .corrupt:
            RPCError(
                .dataLoss,
                "\(message): the issuer's database is damaged; a retry will not help: stop the issuer and restore "
                    + "issuer.sqlite in its data directory from a backup",
                cause: ServerFailure(self))
        // The cause stays local: the node's server logs it at error level (`RPCServer.failureLog`).
        case .fixture, .storage, .keys, .cardData: RPCError(.internal, "the issuer failed: \(message)", cause: self)
        }
    }

    /// A failed sign-in's message as a flow signing the cardholder in passes it on: a storage failure in the words of
    /// its status, which say what to do (a database another process locked: "try again once it lets go"), as a
    /// login says them; it said only "cannot advance the app's counters".
    var shownInSignIn: String {
        code == .storage ? rpcError.message : message
    }

    /// The status of a failed sign-in (`CardholderLogin`) that a flow signing the cardholder in passes on: a locked
    /// app stays RESOURCE_EXHAUSTED, a value that is no PIN INVALID_ARGUMENT, a cardholder without the app NOT_FOUND
    /// and a TSP that cannot be reached UNAVAILABLE, as `login` answers them, so a script tells "locked" from
    /// "wrong PIN"; anything else is UNAUTHENTICATED. A TSP that did not answer in time is UNAVAILABLE here too, as
    /// those flows document it (they leave their session open for another try), where `login` itself answers
    /// DEADLINE_EXCEEDED.
    var signInStatus: StatusCode {
        if code == .tspDidNotAnswer { return .unavailable }
        let status = rpcError.code
        return [.resourceExhausted, .invalidArgument, .notFound, .unavailable].contains(status)
            ? status : .unauthenticated
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
