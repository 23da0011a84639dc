/// The one error type of the scenario module: a code, a message a person can act on (it names the script line), and
/// an optional cause.
public struct ScenarioError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// A line that is not a step of the language, or a step with a wrong argument.
        case syntax
        /// A `${NAME}` that no earlier `save` line defines, or that has no value when the line runs.
        case undefinedVariable
        /// A `save` whose field is not in the response.
        case missingField
        /// A `save … match` expression that did not finish within its time limit.
        case regexTimeLimit
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
