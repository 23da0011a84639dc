import COpenSSL
import Glibc

/// The one error type of TokenetTransport: a code to switch on, a readable message, and the cause.
///
/// OpenSSL reports failures through a thread-local error queue; `TransportError.openSSL` drains that queue into
/// `details` so the reason ("certificate verify failed", "tlsv13 alert certificate required") is not lost.
public struct TransportError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable {
        /// The TLS configuration could not be loaded (missing file, key mismatch, bad CA file).
        case configuration
        /// The TLS handshake failed (verification, protocol mismatch, peer alert).
        case handshakeFailed
        /// A listener closed an accepted connection before its handshake: its address already had the most
        /// handshakes in progress it may have (see `HandshakeLimit`).
        case tooManyHandshakes
        /// The peer certificate does not carry a usable `tokenet://ROLE/ID` identity.
        case peerIdentity
        /// The server refused this client's certificate with a TLS alert. In TLS 1.3 the server checks it after the
        /// client's handshake has finished, so the client learns of the refusal at its first read.
        case certificateRefused
        /// A TLS record could not be processed after the handshake.
        case tls
        /// A socket or system call failed.
        case io
        /// The address could not be parsed or bound.
        case invalidAddress
        /// The connection was closed (locally or by the peer with close_notify) before the operation finished.
        case connectionClosed
        /// The peer closed the TCP stream without a TLS close_notify (possible truncation).
        case unexpectedEOF
        /// An operation did not finish within its allotted time (connect, handshake).
        case timeout
        /// The API was used in a way it does not support (for example two concurrent reads).
        case invalidState
        /// The event loop was shut down.
        case eventLoopStopped
        /// The task waiting for the operation was cancelled.
        case cancelled
    }

    public let code: Code
    public let message: String
    /// Lines from the OpenSSL error queue captured when the error was created (may be empty).
    public let details: [String]
    public let cause: (any Error)?
    /// For `handshakeFailed`: the handshake failed on a refusal (the peer's certificate was rejected, or the peer
    /// does not speak TLS) rather than on a broken or closed connection.
    public let isRefusal: Bool
    /// The TCP connection was never made: the connect was refused, the address unreachable, or nothing answered in
    /// time. Nothing reached the peer, so another address of the same host may be tried (`ConnectTargets`).
    public let isConnectFailure: Bool

    public init(
        _ code: Code, _ message: String, details: [String] = [], cause: (any Error)? = nil, isRefusal: Bool = false,
        isConnectFailure: Bool = false
    ) {
        self.code = code
        self.message = message
        self.details = details
        self.cause = cause
        self.isRefusal = isRefusal
        self.isConnectFailure = isConnectFailure
    }

    /// Whether connecting again must fail the same way until someone changes a certificate, a TLS file or a flag:
    /// a certificate refused by either side, a peer identity not accepted here, a peer that does not speak TLS, or
    /// unusable TLS files. A connection that broke, closed or timed out may work on the next attempt.
    public var isLasting: Bool {
        switch code {
        case .peerIdentity, .certificateRefused, .configuration: true
        case .handshakeFailed: isRefusal
        default: false
        }
    }

    /// Whether the peer closed or reset the connection before the TLS handshake finished, without an alert: a
    /// client that gave up (Ctrl-C, a deadline, a probe that only connects), not one that refused anything.
    public var isCloseDuringHandshake: Bool {
        (code == .handshakeFailed && details.contains { $0.contains("unexpected eof") })
            || (code == .io && message.hasSuffix("(errno \(ECONNRESET))"))
    }

    /// Whether the process ran out of file descriptors (accepting, or opening a socket to connect): its own limit,
    /// not the peer, is what stood in the way.
    public var isOutOfDescriptors: Bool {
        code == .io && message.contains("the process is out of file descriptors")
    }

    /// The message, with OpenSSL's reasons and the cause: read in logs and in the CLI's messages, so the code's name
    /// (`handshakeFailed`, `configuration`), which is for switching on, stays out of it.
    public var description: String {
        var text = message
        if !details.isEmpty { text += " [" + details.joined(separator: "; ") + "]" }
        if let cause { text += " (cause: \(cause))" }
        return text
    }

    /// What pending reads and writes fail with when this side closed the connection itself: an ending, not a
    /// problem with the peer.
    public static let closedLocally = TransportError(.connectionClosed, "connection closed locally")

    /// What writes fail with once the peer has closed its side in order (TLS close_notify): also an ending.
    public static let closedByPeer = TransportError(.connectionClosed, "connection closed by peer")

    /// What a connection attempt fails with when nothing answered its TCP connect in time (a host that is down, a
    /// firewall that drops packets).
    public static let connectTimedOut = TransportError(
        .timeout, "the TCP connection was not established in time", isConnectFailure: true)

    /// What a connection fails with when its TCP connection was made but the peer did not finish the handshake in
    /// time: for a client, a peer that is not a Tokenet node, or one that is stopped or overloaded; for a listener,
    /// a client that connected and went quiet. Worded for either side.
    public static let handshakeTimedOut = TransportError(
        .timeout, "the connection was made but the peer did not finish the handshake in time")

    /// Equality ignores the cause, which is not generally comparable.
    public static func == (lhs: TransportError, rhs: TransportError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.details == rhs.details
    }

    /// Creates an error and drains the calling thread's OpenSSL error queue into `details`.
    static func openSSL(_ code: Code, _ message: String) -> TransportError {
        TransportError(code, message, details: drainOpenSSLErrors())
    }

    /// Creates an error from `errno` for the named system call.
    static func system(
        _ call: String, errno err: Int32, code: Code = .io, isConnectFailure: Bool = false
    ) -> TransportError {
        let reason = String(cString: strerror(err))
        return TransportError(code, "\(call) failed: \(reason) (errno \(err))", isConnectFailure: isConnectFailure)
    }

    /// Returns the pending OpenSSL errors as text, oldest first, and leaves the queue empty.
    static func drainOpenSSLErrors() -> [String] {
        drainOpenSSLErrorCodes().map(text(ofOpenSSLError:))
    }

    /// Returns the pending OpenSSL error codes, oldest first, and leaves the queue empty.
    static func drainOpenSSLErrorCodes() -> [UInt] {
        var codes: [UInt] = []
        while true {
            let error = ERR_get_error()
            if error == 0 { break }
            codes.append(error)
        }
        return codes
    }

    /// OpenSSL's text for one error code, such as "error:0A000418:SSL routines::tlsv1 alert unknown ca".
    static func text(ofOpenSSLError error: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(error, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
