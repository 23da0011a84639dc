import Foundation
import TokenetNode
import TokenetWire

extension SecretFields {
    /// How far the type a message is read as can be trusted, which decides how its text and bytes fields show.
    enum Reading: Equatable {
        /// An application message whose type its call gives (its call_start, `--calls`, `--type`). A text or bytes
        /// field whose content reads as a protobuf message (`MessageShape`) is another type's fields, whose secrets
        /// cannot be told by name, and shows as `"***"` whole: the dissector's `reads_as_message` rule.
        case confirmed
        /// An application message whose type only `--method` suggests: a message of another type that happens to
        /// decode as this one shows its secrets in this one's text fields (an access token read as a card
        /// reference), so every text and bytes value shows as `"***"`.
        case guessed
        /// The frame's own fields (a status message, metadata, a cancel or goaway reason): text a node wrote, with
        /// its card numbers masked; a bytes value (binary metadata) shows as `"***"` whole, as the dissector shows
        /// it, since what it holds cannot be told.
        case frame

        func maskedText(_ text: String) -> String {
            switch self {
            case .guessed: return "***"
            case .frame: return maskPAN(text)
            case .confirmed: return MessageShape.readsAsMessage(text.utf8) ? "***" : maskPAN(text)
            }
        }

        /// A bytes field's base64, with the card numbers of the bytes it stands for masked (read as UTF-8 text,
        /// each byte of a masked digit replaced by `*`) and written again in base64.
        func maskedBytes(_ text: String) -> String {
            guard self == .confirmed else { return "***" }
            guard let data = ProtoJSONBase64.decode(text) else { return maskPAN(text) }
            if MessageShape.readsAsMessage(data) { return "***" }
            let bytes = Array(data)
            let masked = maskPAN(utf8: bytes)
            return masked == bytes ? maskPAN(text) : Data(masked).base64EncodedString()
        }
    }
}
