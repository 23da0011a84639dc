import TokenetTransport
import TokenetWire

/// The status codes of a call: the 17 gRPC codes, as generated from `tokenet.wire.v1.StatusCode`.
public typealias StatusCode = WireV1.StatusCode

/// The one error type of the RPC layer: a status code, a message for a person, optional typed details, and the
/// local cause (never sent to the peer).
///
/// Everything that crosses the wire maps to a status: a handler that throws an `RPCError` sends its code and message;
/// any other error becomes `INTERNAL` with a generic message, so internals never leak to the peer.
public struct RPCError: Error, Sendable, CustomStringConvertible {
    public var code: StatusCode
    public var message: String
    public var details: [WireV1.StatusDetail]
    public var cause: (any Error)?

    public init(_ code: StatusCode, _ message: String, details: [WireV1.StatusDetail] = [], cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.details = details
        self.cause = cause
    }

    /// The error a received status describes.
    public init(status: WireV1.Status) {
        self.init(status.code, status.message, details: status.details)
    }

    public var description: String {
        "\(code.protoValueName ?? String(code.rawValue)): \(message)"
    }

    /// Whether the server is known never to have processed the call: a goaway named a last stream id below it.
    /// Such a call is safe to send again on another connection, whatever it does (`RPCChannel` does so once).
    public var callWasNotProcessed: Bool { cause is CallNotProcessed }

    /// Whether the call was not processed because the server is shutting down (its goaway said so).
    public var callMetAStoppingPeer: Bool { (cause as? CallNotProcessed)?.peerIsStopping == true }

    /// Whether the call never left this side: its channel could not connect to the server, or it gave up (its
    /// deadline, a cancel) before it was sent (`NotConnected`). Such a call did nothing there, whatever it asks.
    public var callWasNeverSent: Bool { cause is NotConnected }

    /// Whether the call was never sent because its connection was closing (draining after a goaway, or out of call
    /// ids): it goes on another connection as it is, which `RPCChannel` opens for it.
    public var callMetAClosingConnection: Bool { (cause as? NotConnected)?.connectionWasClosing == true }

    /// The call was never sent because the peer refused this side's connection in a way retrying cannot mend (its
    /// certificate from another PKI, a role it does not accept): not a peer that is down or still starting.
    public var peerRefusedTheConnection: Bool { (cause as? NotConnected)?.refused == true }

    /// UNAVAILABLE without a lasting refusal: what a peer that is not up yet (still starting) answers. A peer's own
    /// answer of another code (PERMISSION_DENIED, ALREADY_EXISTS) is no such thing.
    public var mayBeAPeerStillStarting: Bool { code == .unavailable && !peerRefusedTheConnection }

    /// How the message of a call opened on a connection that was closing begins (`callWasNeverSent`).
    public static let closedBeforeSent = "the connection closed before the call was sent"

    /// Whether this side's own connection ended the call (`ConnectionEnded`), rather than the peer's status: a node
    /// that passes on the failure of its own link to another node answers with the same words, but its connection
    /// to this side is fine.
    public var connectionEndedHere: Bool { cause is ConnectionEnded }

    /// The status frame body that reports this error to the peer.
    var status: WireV1.Status {
        WireV1.Status(code: code, message: message, details: details)
    }
}

/// The cause of a status the server gives for a failure of its own that the caller can act on, such as
/// RESOURCE_EXHAUSTED for a full disk: the peer reads the message, and the server writes `underlying` to its error
/// log as it does an INTERNAL status's cause (`RPCServer`'s `failureLog`), since the server has failed all the same.
public struct ServerFailure: Error, Sendable, CustomStringConvertible {
    public let underlying: any Error & Sendable

    public init(_ underlying: any Error & Sendable) {
        self.underlying = underlying
    }

    public var description: String { "\(underlying)" }
}

/// The cause of the error a call fails with when this side's connection ended under it (keepalive unanswered, a
/// protocol error, the peer gone): the message says why; the marker says it happened here, not at the peer.
public struct ConnectionEnded: Error, Sendable, CustomStringConvertible {
    public init() {}

    public var description: String { "this side's connection to the peer ended" }
}

/// The cause of an error for a call that was never sent: its channel could not connect to the server (UNAVAILABLE),
/// or the call gave up first (DEADLINE_EXCEEDED, CANCELLED). `reason` is what the last attempt met.
public struct NotConnected: Error, Sendable, CustomStringConvertible {
    public let reason: String
    /// The call's connection was closing: another connection may take it (`RPCError.callMetAClosingConnection`).
    public let connectionWasClosing: Bool
    /// The peer refused the connection for good (`RPCError.peerRefusedTheConnection`).
    public let refused: Bool

    public init(reason: String, connectionWasClosing: Bool = false, refused: Bool = false) {
        self.reason = reason
        self.connectionWasClosing = connectionWasClosing
        self.refused = refused
    }

    public var description: String { reason }
}

/// The cause of the error a request sent on a call that has already ended fails with (the server answered it, or it
/// was cancelled): the call's own outcome is in its response stream.
public struct CallAlreadyEnded: Error, Sendable, CustomStringConvertible {
    public init() {}

    public var description: String { "the call has ended" }
}

/// The cause of an UNAVAILABLE error for a call that a goaway refused before the server processed it.
public struct CallNotProcessed: Error, Sendable, CustomStringConvertible {
    /// Whether the server's goaway said it is shutting down; otherwise it refused the connection for another reason
    /// its message gives (too many connections from one peer, a protocol error), and is not stopping.
    public let peerIsStopping: Bool

    public init(peerIsStopping: Bool = false) { self.peerIsStopping = peerIsStopping }

    public var description: String { "the server refused the call before processing it" }
}

/// The cause of an UNAVAILABLE error for a call that was not sent because the connection's peer is not the one the
/// call was for (`CallOptions.expectedPeer`): the address leads to another party, or to one without an identity.
public struct UnexpectedPeer: Error, Sendable, CustomStringConvertible {
    public let expected: PeerIdentity
    /// nil when the connection carries no identity (plaintext).
    public let actual: PeerIdentity?

    public init(expected: PeerIdentity, actual: PeerIdentity?) {
        self.expected = expected
        self.actual = actual
    }

    public var description: String {
        "the peer at this address is \(actual.map { "\($0)" } ?? "unidentified (plaintext)"), not \(expected)"
    }
}

extension RPCError {
    /// The peer that answered instead of the expected one, when that is why the call was not sent.
    public var unexpectedPeer: UnexpectedPeer? { cause as? UnexpectedPeer }
}
