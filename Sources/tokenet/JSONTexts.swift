import Foundation
import TokenetNode
import TokenetWire

/// Splits text holding JSON values one after another (`{"a": 1} {"a": 2}`) into one text per value, so
/// `tokenet call -d @` can read the requests of a client-streaming call from standard input.
///
/// Text holding only whitespace holds none: an empty standard input sends a client-streaming method no request, as in
/// grpcurl. It only finds where each value ends (matching brackets outside strings); the message's JSON decoder then
/// checks each text and names what is wrong.
enum JSONTexts {
    static func split(_ text: String) throws(CLIError) -> [String] {
        let bytes = Array(text.utf8)
        var texts: [String] = []
        var index = 0
        while true {
            // The first text keeps the whitespace before it, so that the decoder's "at byte N" counts from the
            // input's start, not from the request's first character; the next ones, named "request 2" and so on,
            // count from their own start.
            let leading = index
            while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
            guard index < bytes.count else { break }
            let start = index
            var depth = 0
            var inString = false
            var escaped = false
            scanning: while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth <= 0 { break scanning }
                default:
                    // A bare value (a number, true, null) ends at whitespace; the decoder rejects it as a request.
                    if depth == 0 && isWhitespace(byte) { break scanning }
                }
            }
            // After the first value, only whole objects may follow (one per request of a streaming call); anything
            // else is left over from a mistyped request, where "-d holds 2" would point nowhere near it.
            if !texts.isEmpty && (bytes[start] != UInt8(ascii: "{") || depth > 0 || inString) {
                // A request that is itself not JSON (`{bad} x`) is what to fix first: its own error is the one
                // reported, where the trailing characters pointed past it.
                for earlier in texts {
                    do throws(WireError) {
                        _ = try JSONValue(parsing: earlier)
                    } catch {
                        throw CLIError(.usage, "call: the request JSON is not valid: \(maskPAN(error.message))")
                    }
                }
                let rest = String(decoding: bytes[start..<index].prefix(20), as: UTF8.self)
                let what =
                    bytes[start] == UInt8(ascii: "{")
                    ? "an object that is never closed"
                    : "'\(maskPAN(rest.trimmingCharacters(in: .whitespacesAndNewlines)))'"
                throw CLIError(.usage, "call: the request JSON has trailing characters at byte \(start): \(what)")
            }
            texts.append(String(decoding: bytes[(texts.isEmpty ? leading : start)..<index], as: UTF8.self))
        }
        // None at all is no request: what a client-streaming method may be sent; `CallCommand.encode` refuses it
        // for the others, which take exactly one.
        return texts
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
