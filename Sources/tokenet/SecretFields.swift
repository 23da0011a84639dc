import Foundation
import TokenetNode

/// The fields whose values the decoders never print, whatever message holds them: a card's security code (`cvc`),
/// a PIN (`pin`) and a strong-authentication credential's secret (`secret`). A card number is masked wherever it
/// appears (`maskPAN`); these are masked by name, since a three-digit code or a PIN looks like any other value.
enum SecretFields {
    static let names: Set<String> = ["cvc", "pin", "secret"]

    /// `json` (as the protobuf JSON printer writes it) with the string value of every secret field replaced by
    /// `"***"`.
    static func masked(_ json: String) -> String {
        guard names.contains(where: { json.contains("\"\($0)\"") }) else { return json }
        var output = ""
        output.reserveCapacity(json.utf8.count)
        var rest = Substring(json)
        while let key = rest.firstMatch(of: pattern) {
            output += rest[..<key.range.lowerBound]
            output += "\"\(key.output.1)\"\(key.output.2)\"***\""
            rest = rest[key.range.upperBound...]
        }
        output += rest
        return output
    }

    /// `json` with every card number masked (`maskPAN`) and every secret field's value replaced: what the decoders
    /// print. A `\uXXXX` escape is kept whole: its digits joined a card number that followed it (`\u0010` before
    /// a number read as text), and masking them left JSON that no parser reads.
    static func maskedJSON(_ json: String) -> String {
        var output = ""
        var rest = Substring(json)
        while let escape = rest.firstMatch(of: unicodeEscape) {
            output += maskPAN(String(rest[..<escape.range.lowerBound]))
            output += rest[escape.range]
            rest = rest[escape.range.upperBound...]
        }
        output += maskPAN(String(rest))
        return masked(output)
    }

    nonisolated(unsafe) private static let unicodeEscape = /\\u[0-9a-fA-F]{4}/

    /// `"name": "value"`, the value a JSON string with its escapes.
    nonisolated(unsafe) private static let pattern = /"(cvc|pin|secret)"(\s*:\s*)"(?:[^"\\]|\\.)*"/
}
