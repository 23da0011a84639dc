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
