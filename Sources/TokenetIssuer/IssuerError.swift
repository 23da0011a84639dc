import TokenetRPC

/// The one error type of TokenetIssuer: a code, a message a person can act on, and the underlying cause.
public struct IssuerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The fixture file is missing, unreadable or inconsistent.
        case fixture
        /// The issuer's database could not be opened, migrated, read or written.
        case storage
        /// The issuer's key pair or vault key could not be loaded, created or used.
        case keys
        /// Card data from a peer could not be decrypted or parsed.
        case cardData
        /// A request is malformed or breaks a policy (a PIN that is too short or trivial).
        case invalidArgument
        /// What the request names does not exist: a user, an account, an activation reference, an app enrolment.
        case notFound
        /// What the request would create is already there: a card number another card carries.
        case alreadyExists
        /// The cardholder could not be authenticated: a wrong PIN, codes the TSP refused.
        case unauthenticated
        /// A credential is locked after repeated failures until the issuer unlocks it.
        case locked
        /// The state does not allow the request (nothing left to activate, an activation the TSP refused).
        case failedPrecondition
        /// The TSP could not be reached or failed.
        case unavailable
        /// The TSP lacks, for now, what the request needs (a full disk, a limit on calls): RESOURCE_EXHAUSTED, which
        /// tells the operator to free the resource or wait, where UNAVAILABLE would only say to try again.
        case tspExhausted
        /// The TSP did not answer within the time the call had (DEADLINE_EXCEEDED): it may have done what was asked
        /// all the same, where UNAVAILABLE read as a TSP that was down.
        case tspDidNotAnswer
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
}

/// A cause known only by its description, for underlying errors that are not `Sendable`.
struct IssuerDescribedError: Error, Sendable, CustomStringConvertible {
    var description: String

    init(_ error: any Error) {
        description = String(describing: error)
    }
}
