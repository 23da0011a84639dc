/// The one error type of the wire layer: encoding, decoding, JSON and framing failures.
///
/// Every case carries a message a person can act on ("field \"foo\" is not part of tokenet.wire.v1.Frame"),
/// so the RPC layer can pass it on as the text of an INVALID_ARGUMENT status unchanged.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// Bytes that are not a valid serialization of the expected message.
        case invalidMessage
        /// A well-formed message holding a value Tokenet cannot read: a string with a NUL character (protobuf-c would
        /// cut it short) or one that is not UTF-8.
        case unreadableValue
        /// A value Tokenet cannot put on the wire (for example a NUL character inside a string).
        case unencodableValue
        /// Text that is not JSON, or JSON that does not match the message.
        case invalidJSON
        /// A length prefix larger than the negotiated maximum frame size.
        case frameTooLarge
        /// The byte stream ended inside a frame.
        case truncatedFrame
        /// The stream opened with the bytes of another protocol (HTTP, or TLS on a plaintext connection).
        case foreignProtocol
        /// A call_start larger than `FrameFormat.maximumCallStartSize`: its call alone is refused.
        case callStartTooLarge
    }

    public var code: Code
    public var message: String
    /// Set by `FrameDecoder` for a frame it skipped: the frame was well-formed but held an unreadable value
    /// (`unreadableValue`) or was a call_start too large to read (`callStartTooLarge`), so only the call on this
    /// stream is concerned and the decoder carries on.
    public var streamID: UInt32?
    /// With `streamID`: whether the skipped frame was a call_start, which opens a call to refuse; any other frame
    /// on an id the receiver does not know is ignored, as a readable one would be. True unless said otherwise: a
    /// call_start taken for another frame would be ignored, and its caller left waiting for an answer.
    public var opensCall: Bool

    public init(_ code: Code, _ message: String, streamID: UInt32? = nil, opensCall: Bool = true) {
        self.code = code
        self.message = message
        self.streamID = streamID
        self.opensCall = opensCall
    }

    /// The message alone: it reaches status messages and the CLI's output, where the code's name (`invalidJSON`) would
    /// only get in the way of the sentence.
    public var description: String { message }
}
