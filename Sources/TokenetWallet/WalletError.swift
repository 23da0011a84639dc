import TokenetRPC
import TokenetStorage

/// The one error type of TokenetWallet: a code, a message a person can act on, and the cause.
///
/// Handlers turn it into an `RPCError` with the matching status code, so the CLI prints the same message.
public struct WalletError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The request is malformed: a card number that is not a number, an expiry that is not MM/YY.
        case invalidArgument
        /// No card has the given reference.
        case notFound
        /// The card is not in a state that allows the action (for example, its eligibility receipt expired).
        case failedPrecondition
        /// The TSP could not be reached or answered with something unusable.
        case unavailable
        /// Storage or configuration failed.
        case `internal`
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        guard let cause else { return message }
        return "\(message): \(cause)"
    }

    /// The status a caller sees. Internal causes stay local; the message names what failed.
    public var rpcError: RPCError {
        // A full disk is the one internal failure the caller can do something about (RESOURCE_EXHAUSTED, as gRPC has
        // it for a file system out of space); the node's log still gets the cause (`ServerFailure`).
        if code == .internal, let storage = cause as? StorageError, storage.code == .full {
            return RPCError(
                .resourceExhausted,
                "\(message): the wallet's disk is full; free space on the disk that holds its data directory, then "
                    + "try again",
                cause: ServerFailure(self))
        }
        // A disk or directory that refuses writes is the operator's to mend, not a fault of the wallet's own.
        if code == .internal, let storage = cause as? StorageError, storage.isUnwritableStorage {
            return RPCError(
                .unavailable, "\(message): \(storage.unwritableStorageAdvice(of: "the wallet"))",
                cause: ServerFailure(self))
        }
        if code == .internal, let storage = cause as? StorageError, storage.isBusy {
            return RPCError(
                .unavailable, "\(message): \(storage.busyAdvice(of: "the wallet"))", cause: ServerFailure(self))
        }
        // A damaged page fails the same way at every retry.
        if code == .internal, let storage = cause as? StorageError, storage.code == .corrupt {
            return RPCError(
                .dataLoss,
                "\(message): the wallet's database is damaged; a retry will not help: stop the wallet and restore "
                    + "\(WalletNode.databaseFileName) in its data directory from a backup",
                cause: ServerFailure(self))
        }
        let status: StatusCode =
            switch code {
            case .invalidArgument: .invalidArgument
            case .notFound: .notFound
            case .failedPrecondition: .failedPrecondition
            case .unavailable: .unavailable
            case .internal: .internal
            }
        return RPCError(status, message, cause: cause)
    }
}

/// Runs `body`, turning wallet errors into statuses and passing the TSP's statuses through with their code.
func answering<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as WalletError {
        throw error.rpcError
    }
}

extension WalletError: RPCErrorConvertible {}
