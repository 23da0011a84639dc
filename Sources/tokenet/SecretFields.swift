import Foundation
import TokenetNode
import TokenetWire

/// The fields whose values the decoders never print, whatever message holds them: a card's security code (`cvc`),
/// a PIN (`pin`), a strong-authentication credential's secret (`secret`), and the bearer credentials a capture would
/// let someone replay: an issuer app's activation code (`activation_code`) and access token (`access_token`). A card
/// number is masked wherever it appears (`maskPAN`); these are masked by name, since a three-digit code or a PIN
/// looks like any other value. Tools/protoc-gen-tokenet-swift lists the same names for the dissector.
enum SecretFields {
    static let names: Set<String> = [
        "cvc", "pin", "secret", "activation_code", "activationCode", "access_token", "accessToken",
    ]

    /// `json` (proto3 JSON as the decoders print it) with every card number masked and every secret field's value
    /// replaced by `"***"`: what the decoders print. The JSON is read and written again, so a string is masked as
    /// the text it holds, escapes read (a tab between a card number's groups, written `\t`, joins them as it does in
    /// a log), and the bytes behind a base64 value are masked too: a bytes field is printed as its base64, from
    /// which a card number written into it reads back.
    static func maskedJSON(_ json: String) -> String {
        guard let value = try? JSONValue(parsing: json) else { return maskPAN(json) }
        return masked(value).text(indent: json.contains("\n") ? 2 : 0)
    }

    static func masked(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text):
            return .string(maskedText(text))
        case .number(let text):
            // A double or float whose digits read as a card number (int64 fields are strings already): written
            // masked, as a string, which proto3 JSON reads for a number too.
            let shown = maskPAN(text)
            return shown == text ? value : .string(shown)
        case .array(let items):
            return .array(items.map(masked))
        case .object(let members):
            return .object(
                members.map { member in
                    if names.contains(member.key), case .string = member.value { return (member.key, .string("***")) }
                    return (member.key, masked(member.value))
                })
        default:
            return value
        }
    }

    /// A string value with its card numbers masked; one that is base64 (as bytes fields are written) has those of
    /// the bytes it stands for masked (read as UTF-8 text, each byte of a masked digit replaced by `*`), and is
    /// written again in base64.
    /// A string that reads as a protobuf message, itself or the bytes behind its base64, is another type's fields
    /// (`MessageShape`) and shows as `"***"` whole.
    static func maskedText(_ text: String) -> String {
        if MessageShape.readsAsMessage(text.utf8) { return "***" }
        let decoded = text.utf8.count >= 8 ? ProtoJSONBase64.decode(text) : nil
        if let decoded, MessageShape.readsAsMessage(decoded) { return "***" }
        let shown = maskPAN(text)
        guard shown == text, text.utf8.count >= 20, let data = decoded else { return shown }
        let bytes = Array(data)
        let masked = maskPAN(utf8: bytes)
        return masked == bytes ? text : Data(masked).base64EncodedString()
    }
}
