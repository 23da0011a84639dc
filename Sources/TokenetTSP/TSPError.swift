import TokenetCard
import TokenetRPC
import TokenetStorage

/// The one error type of the TSP party: a code that maps to an RPC status, a message a person can act on, and the
/// local cause (logged, never sent to the caller).
public struct TSPError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The request is malformed: a missing field, a JWE that does not decrypt, an unknown key id.
        case invalidArgument
        /// The request is well formed but the state does not allow it: an expired receipt, T&C not accepted.
        case failedPrecondition
        /// A receipt, session or token the request names does not exist.
        case notFound
        /// The caller may not act on what it names (another wallet account's session, another node's issuer).
        case permissionDenied
        /// What the caller would make exists already as another's: a running node of the caller's certificate.
        case alreadyExists
        /// A credential the request presents (an access token, an activation code) is forged, expired or unknown.
        case unauthenticated
        /// A bounded resource is used up: a queue's in-flight window, a credential locked after repeated failures.
        case resourceExhausted
        /// The TSP cannot do it now and a retry may: a digitization interrupted by the TSP's own shutdown.
        case unavailable
        /// Storage, keys or cryptography failed inside the TSP.
        case `internal`
        /// The TSP's disk is full, so a write failed: RESOURCE_EXHAUSTED, as gRPC has it for a file system out of
        /// space. The transaction that failed was not committed.
        case diskFull
        /// The TSP's database is damaged (SQLite found a malformed page): DATA_LOSS, since no retry gets past it.
        case dataLoss
        /// The TSP's disk or data directory refused a write (an I/O error, a read-only file or mount): UNAVAILABLE
        /// until its operator mends it. The transaction that failed was not committed.
        case storageUnavailable
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The message with its local cause, for the TSP's log (which names the status apart): the code's name
    /// (`internal`, `invalidArgument`) stays out of the sentence.
    public var description: String {
        guard let cause else { return message }
        return "\(message) (\(cause))"
    }

    /// The status sent to the caller. Internal failures keep their cause local.
    public var rpcError: RPCError {
        switch code {
        case .invalidArgument: RPCError(.invalidArgument, message)
        case .failedPrecondition: RPCError(.failedPrecondition, message)
        case .notFound: RPCError(.notFound, message)
        case .permissionDenied: RPCError(.permissionDenied, message)
        case .alreadyExists: RPCError(.alreadyExists, message)
        case .unauthenticated: RPCError(.unauthenticated, message)
        case .resourceExhausted: RPCError(.resourceExhausted, message)
        case .unavailable: RPCError(.unavailable, message)
        case .internal: RPCError(.internal, message)
        case .diskFull: RPCError(.resourceExhausted, message)
        case .dataLoss: RPCError(.dataLoss, message)
        case .storageUnavailable: RPCError(.unavailable, message)
        }
    }

    /// Whether the failure is the TSP's own (logged at error level), not a refusal of the caller's request.
    var isFailure: Bool { [.internal, .diskFull, .dataLoss, .storageUnavailable].contains(code) }

    /// A storage or crypto failure inside the TSP, reported to the caller without its details.
    static func `internal`(_ what: String, _ error: any Error) -> TSPError {
        if let error = error as? TSPError { return error }
        if let storage = error as? StorageError, storage.code == .full {
            return TSPError(
                .diskFull,
                "the token service could not save its work while \(what): its disk is full; free space on the disk "
                    + "that holds its data directory, then try again",
                cause: Described(error))
        }
        if let storage = error as? StorageError, storage.isUnwritableStorage {
            return TSPError(
                .storageUnavailable,
                "the token service failed while \(what): " + storage.unwritableStorageAdvice(of: "it"),
                cause: Described(error))
        }
        if let storage = error as? StorageError, storage.isBusy {
            return TSPError(
                .storageUnavailable, "the token service failed while \(what): " + storage.busyAdvice(of: "the TSP"),
                cause: Described(error))
        }
        // "Try again later" sent people to retry a call that met a damaged page, which fails the same way each time.
        if let storage = error as? StorageError, storage.code == .corrupt {
            return TSPError(
                .dataLoss,
                "the token service's database is damaged (found while \(what)); a retry will not help: stop the TSP "
                    + "and restore tsp.sqlite in its data directory from a backup",
                cause: Described(error))
        }
        return TSPError(.internal, "the token service failed while \(what); try again later", cause: Described(error))
    }
}

/// A cause known by its description, for errors that are not `Sendable`.
struct Described: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = String(describing: error) }
}

extension TSPError {
    /// NOT_FOUND for a digital card id the TSP has no token for. A wallet's or an issuer's card reference given in
    /// its place (`card-1`, `card-visa-approve`) is said to be one, with where the digital card id is shown; so is a
    /// card number.
    static func unknownToken(_ digitalCardID: String) -> TSPError {
        var message = "no token has digital card id \"\(digitalCardID)\""
        if digitalCardID.lowercased().hasPrefix("card-") {
            message +=
                "; \(digitalCardID) is a wallet's or an issuer's card reference: the TSP names a token by its digital "
                + "card id (DNITHE… or DWSPMC…), which tokenet tsp tokens lists and tokenet wallet cards shows as "
                + "DIGITAL CARD"
        } else if (try? PAN(digitalCardID)) != nil {
            // Masked on its way out, as every status message of a node is.
            message +=
                "; that is a card number: the TSP names a token by its digital card id (DNITHE… or DWSPMC…), which "
                + "tokenet tsp tokens lists (tokenet tsp tokens --issuer ID for one issuer's)"
        }
        return TSPError(.notFound, message)
    }

    /// The message of a card error (written for people), or the error's description.
    static func describe(_ error: any Error) -> String {
        (error as? CardError)?.message ?? String(describing: error)
    }
}

extension TSPError: RPCErrorConvertible {}
