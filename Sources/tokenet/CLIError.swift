/// The one error type of the `tokenet` CLI.
struct CLIError: Error, CustomStringConvertible, Sendable {
    enum Code: Sendable {
        /// Wrong subcommand, flag or value: exit status 2.
        case usage
        /// The environment is not as expected (missing binaries, failing Tools/gen-certs): exit status 1.
        case setup
        /// A node failed to start, to become ready, or to stop cleanly: exit status 1.
        case node
        /// `list`, `describe`, `call`: no connection (refused, TLS failure, unreadable certificate files) or a method
        /// this build cannot encode: exit status 1.
        case connection
        /// `decode`: bytes that are not the frames or the message they should be: exit status 1.
        case data
    }

    var code: Code
    var message: String
    var cause: (any Error & Sendable)?

    init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    var exitStatus: Int32 { code == .usage ? 2 : 1 }

    var description: String {
        guard let cause else { return message }
        return "\(message): \(cause)"
    }
}
