import Foundation

/// The one error type of TokenetNode.
///
/// `code` decides how a node reacts: usage and configuration mistakes exit with status 2 so scripts can tell
/// "you called me wrong" apart from "I failed while running" (status 1).
public struct NodeError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// A flag or its value on the command line is wrong.
        case usage
        /// The configuration file, or the combination of settings, is wrong.
        case config
        /// Reading or writing a file or directory failed.
        case io
        /// Binding or running the listener failed.
        case listen
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The process exit status this error maps to.
    public var exitStatus: Int32 {
        switch code {
        case .usage, .config: return 2
        case .io, .listen: return 1
        }
    }

    public var description: String {
        guard let cause else { return message }
        return "\(message): \(cause)"
    }
}

/// An `errno` value captured at the failing call, so the message says what the kernel said.
public struct SystemCallError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

extension NodeError {
    /// The most characters of a typed value an error message quotes.
    static let shownValueLimit = 256

    /// A value typed on the command line or in a config file as an error quotes it: a card number in it masked,
    /// then cut to `shownValueLimit` characters with how many more there were, and its control characters and line
    /// breaks escaped. Quoted whole, a value of 100,000 characters made a message of 100 KB, and a line break in
    /// one split the message over two lines.
    static func shown(_ value: String) -> String {
        let masked = maskPAN(value).unicodeScalars
        guard masked.count > shownValueLimit else { return LogRecord.escapingInvisibles(String(masked)) }
        let kept = String(String.UnicodeScalarView(masked.prefix(shownValueLimit)))
        return LogRecord.escapingInvisibles(kept)
            + "... (\(masked.count) characters, the last \(masked.count - shownValueLimit) cut)"
    }
}
