/// The one error type of the fault proxy.
public struct FaultError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// A control line that is not a command.
        case badCommand
        /// The listening address could not be bound, or the upstream address is not usable.
        case address
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
