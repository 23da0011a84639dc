import COpenSSL

/// The one error type of TokenetCard: a code to switch on, a message a person can act on, the OpenSSL error queue
/// captured as text, and an optional underlying cause.
///
/// Card checks that fail carry a `CardRejection` too, so eligibility can say exactly why a card was refused.
/// Messages never contain a full card number (only its last four digits at most).
public struct CardError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        /// A card number or expiry failed validation; `rejection` says which check failed.
        case invalidCard
        /// The JWE compact serialization is malformed (part count, base64url, header JSON, field sizes).
        case malformedJWE
        /// The JWE header names an `alg`, `enc`, `zip` or `crit` this implementation does not support.
        case unsupportedAlgorithm
        /// The JWE header names a key id the keyring does not hold (or names none).
        case unknownKeyID
        /// RSA-OAEP could not unwrap the content-encryption key (wrong key or altered encrypted key).
        case keyUnwrapFailed
        /// AES-GCM authentication failed: the header, IV, ciphertext, tag or associated data were altered.
        case authenticationFailed
        /// The decrypted payload is not the expected JSON card-data object.
        case invalidPayload
        /// A key could not be generated, parsed or serialized, or is not acceptable (type, size).
        case invalidKey
        /// A DataVault record is too short or has an unknown version.
        case malformedRecord
        /// The vault key file is missing or holds another key than the one a database's sealed data was sealed with.
        case vaultKeyMismatch
        /// A database's vault key check value is damaged (not a sealed check value, or one the key that opens the
        /// database's sealed data cannot open), so it cannot tell whether the key is the right one.
        case corruptKeyCheck
        /// A token lifecycle action is not allowed in the token's current state.
        case invalidTransition
        /// Tokens could not be issued with the given configuration (BIN ranges, exhausted number space).
        case tokenConfiguration
        /// A file could not be read or written.
        case io
        /// An OpenSSL primitive failed unexpectedly (see `details`).
        case crypto
    }

    public let code: Code
    public let message: String

    /// Whether the error is about the node's key files (one that does not fit the database, a wrong size or mode,
    /// a directory or a dangling link where a key belongs) or the database's check value for its key: the
    /// operator's to fix, not a passing failure.
    public var isKeyFileProblem: Bool {
        code == .vaultKeyMismatch || code == .corruptKeyCheck || code == .invalidKey || code == .io
    }
    /// The failed card check, for `invalidCard` errors.
    public let rejection: CardRejection?
    /// Lines from the OpenSSL error queue captured when the error was created (may be empty).
    public let details: [String]
    public let cause: (any Error)?

    public init(
        _ code: Code,
        _ message: String,
        rejection: CardRejection? = nil,
        details: [String] = [],
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.rejection = rejection
        self.details = details
        self.cause = cause
    }

    /// An `invalidCard` error whose message is the rejection's message.
    public init(rejection: CardRejection) {
        self.init(.invalidCard, rejection.message, rejection: rejection)
    }

    /// The message with OpenSSL's reasons and the cause: read in logs and in a node's refusal to start, so the
    /// code's name (`invalidKey`, `vaultKeyMismatch`), which is for switching on, stays out of it.
    public var description: String {
        var text = message
        if !details.isEmpty { text += " [" + details.joined(separator: "; ") + "]" }
        if let cause { text += " (cause: \(cause))" }
        return text
    }

    /// Equality ignores the cause, which is not generally comparable.
    public static func == (lhs: CardError, rhs: CardError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.rejection == rhs.rejection
            && lhs.details == rhs.details
    }

    /// Creates an error and drains the calling thread's OpenSSL error queue into `details`.
    static func openSSL(_ code: Code, _ message: String) -> CardError {
        CardError(code, message, details: OpenSSLErrorQueue.drain())
    }
}

/// OpenSSL reports failures through a thread-local queue; these helpers keep stale entries from one operation out
/// of the next operation's error.
enum OpenSSLErrorQueue {
    /// Returns the pending OpenSSL errors as text, oldest first, and leaves the queue empty.
    static func drain() -> [String] {
        var lines: [String] = []
        while true {
            let error = ERR_get_error()
            if error == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(error, &buffer, buffer.count)
            lines.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return lines
    }

    /// Empties the queue before an operation so its error reports only its own failures.
    static func clear() {
        ERR_clear_error()
    }
}
