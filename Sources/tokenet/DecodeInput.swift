import Foundation
import TokenetWire

/// The bytes `tokenet decode` reads, from raw, hexadecimal or base64 input.
enum DecodeInput {
    enum Encoding {
        case raw, hex, base64
    }

    /// `file` names the input in what is wrong with it (nil or `-` for standard input): with `--calls` two files are
    /// read, and the message did not say which one held the stray byte.
    static func bytes(_ input: [UInt8], encoding: Encoding, file: String? = nil) throws(CLIError) -> [UInt8] {
        let name = file.flatMap { $0 == "-" ? nil : $0 }
        switch encoding {
        case .raw: return input
        case .hex: return try hex(input, file: name)
        case .base64: return try base64(input, file: name)
        }
    }

    /// Pairs of hex digits; whitespace and colons between them are ignored (`xxd -p`, Wireshark's "Copy as Hex").
    static func hex(_ input: [UInt8], file: String? = nil) throws(CLIError) -> [UInt8] {
        if let format = followFormat(input) { throw followOutputError(format, flag: "--hex") }
        if isHexDump(input) {
            throw CLIError(
                .usage,
                "decode: --hex: \(file ?? "standard input") is a hex dump (an offset and a text column beside the "
                    + "bytes, as tshark's follow,tls,hex prints them); keep the bytes alone: "
                    + "sed 's/^\\t//' FILE | cut -c11-58 > side.hex")
        }
        let of = file.map { " of \($0)" } ?? ""
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count / 2)
        var high: UInt8?
        for (offset, character) in input.enumerated() {
            if character == UInt8(ascii: ":") || character == UInt8(ascii: " ") || (9...13).contains(character) {
                continue
            }
            guard let digit = hexDigit(character) else {
                // A control character is named by its value: written as it is, an escape (`\e[2J`) acted on the
                // terminal and a NUL showed as nothing.
                let shown =
                    (0x21...0x7E).contains(character)
                    ? "'\(Character(UnicodeScalar(character)))'" : "byte \(character)"
                throw CLIError(.usage, "decode: --hex: \(shown) at offset \(offset)\(of) is not a hex digit")
            }
            if let first = high {
                bytes.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        guard high == nil else {
            throw CLIError(.usage, "decode: --hex: \(file ?? "the input") ends in half a byte (an odd digit)")
        }
        return bytes
    }

    /// "hex" or "base64" when raw input is wholly text of that encoding (whitespace and, for hex, colons aside):
    /// frames never are, since a length prefix of at most 4 MiB starts with a zero byte.
    static func textEncoding(of input: [UInt8]) -> String? {
        // One pass that stops at the first byte neither alphabet has: a copy of the input without its whitespace,
        // then two passes over it, was a tenth of the time decode took for a message of megabytes.
        var (hex, base64, any) = (true, true, false)
        for byte in input where !(9...13).contains(byte) && byte != UInt8(ascii: " ") {
            any = true
            if hex && hexDigit(byte) == nil && byte != UInt8(ascii: ":") { hex = false }
            if base64 && !base64Characters[Int(byte)] { base64 = false }
            if !hex && !base64 { return nil }
        }
        guard any else { return nil }
        return hex ? "hex" : "base64"
    }

    /// `textEncoding(of:)` for input that should hold frames: text whose decoded bytes could start one (a zero byte;
    /// none, for text of a few characters). Words of plain text ("hello world") are in the base64 alphabet too, and
    /// the advice to add --base64 then failed on a frame of hundreds of megabytes.
    static func frameTextEncoding(of input: [UInt8]) -> String? {
        guard let encoding = textEncoding(of: input) else { return nil }
        guard let bytes = try? self.bytes(input, encoding: encoding == "hex" ? .hex : .base64) else {
            // Hex that ends in half a byte, or base64 of a length none has: --hex or --base64 names the problem.
            return encoding
        }
        return bytes.first.map { $0 == 0 } ?? true ? encoding : nil
    }

    /// Which bytes base64 text holds, in either alphabet, with its padding.
    private static let base64Characters: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=".utf8 {
            table[Int(byte)] = true
        }
        return table
    }()

    /// Whether the input's first bytes are printable text or whitespace, where frames start with a zero byte.
    static func startsWithText(_ input: [UInt8]) -> Bool {
        !input.isEmpty && input.prefix(4).allSatisfy { (0x20...0x7E).contains($0) || (9...13).contains($0) }
    }

    /// `tshark -z follow,tls,raw,N` prints both sides of a connection under a header (`====…`, `Follow: tls,raw`),
    /// one side's lines indented with a tab: read as hex, the header's first `=` was all the command named. Returns
    /// the output's form, "raw" or "hex" (`follow,tls,hex`: an offset and a text column beside the bytes), or nil.
    static func followFormat(_ input: [UInt8]) -> String? {
        let text = String(decoding: input.prefix(4096), as: UTF8.self)
        guard text.drop(while: { $0.isWhitespace }).hasPrefix("===="),
            let header = text.split(separator: "\n").first(where: { $0.hasPrefix("Follow: ") })
        else { return nil }
        return header.hasSuffix(",hex") ? "hex" : "raw"
    }

    /// Whether the first line is one of a hex dump's (`00000010  64 18 80 80 …  d...@ .N`, maybe indented with a
    /// tab): the side of a follow,tls,hex output kept by `sed`, which --hex read up to the text column. The text
    /// column, two spaces past the sixteenth byte's column, is required too: spaced hex whose first four bytes (a
    /// frame's length, `0000000f  12 0d 08 …`) stand apart reads as an offset, and was refused.
    static func isHexDump(_ input: [UInt8]) -> Bool {
        let text = String(decoding: input.prefix(200), as: UTF8.self)
        let line = Array((text.split(separator: "\n").first ?? "").drop { $0 == "\t" })
        let parts = String(line).split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count > 3, parts[0].count == 8, parts[0].allSatisfy(\.isHexDigit), parts[1].isEmpty else {
            return false
        }
        // The offset and two spaces, 16 bytes of "xx " with a space after the eighth, then the text column.
        guard line.count > 60, line[34] == " ", line[58] == " ", line[59] == " " else { return false }
        return parts[2].count == 2 && parts[2].allSatisfy(\.isHexDigit)
    }

    /// What to do with tshark's follow output (`format` as `followFormat` gives it): commands that split it into the
    /// hex of each side, for the form it is in. `flag` is how the message starts ("--hex", or the file's name when
    /// it was given without --hex).
    static func followOutputError(_ format: String, flag: String) -> CLIError {
        let sides =
            format == "hex"
            ? "the lines that start with a tab are one side (sed -n 's/^\\t//p' FILE | cut -c11-58 > one.hex), the "
                + "other lines of an offset and bytes the other side (grep -E '^[0-9A-Fa-f]{8}  ' FILE | cut -c11-58 "
                + "> other.hex)"
            : "the lines that start with a tab are one side (sed -n 's/^\\t//p' FILE > one.hex), the other lines "
                + "of hex digits the other side (grep -E '^[0-9a-f]+$' FILE > other.hex)"
        return CLIError(
            .usage,
            "decode: \(flag): this is tshark's follow output, which holds both sides of the connection under a "
                + "header; decode reads one side: \(sides); give them with --hex, the client's side (the one with "
                + "the call_start frames) as --calls CLIENT and the server's as FILE")
    }

    private static func hexDigit(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Standard or URL-safe base64, padded or not; whitespace is ignored. Read strictly (`ProtoJSONBase64`): a stray
    /// `=` or a truncated value is refused with where it went wrong, instead of decoding to bytes nobody wrote.
    static func base64(_ input: [UInt8], file: String? = nil) throws(CLIError) -> [UInt8] {
        let text = input.filter { !(9...13).contains($0) && $0 != UInt8(ascii: " ") }
        if let data = ProtoJSONBase64.decode(String(decoding: text, as: UTF8.self)) { return Array(data) }
        throw CLIError(.usage, "decode: --base64: " + (file.map { "\($0): " } ?? "") + base64Problem(input))
    }

    /// What is wrong with base64 text that does not decode: the first character outside both alphabets (by its
    /// offset in the input as given), a `=` before the end, or a length that no base64 text has.
    private static func base64Problem(_ input: [UInt8]) -> String {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_".utf8)
        var characters = 0
        var paddingAt: Int?
        for (offset, character) in input.enumerated() {
            if (9...13).contains(character) || character == UInt8(ascii: " ") { continue }
            characters += 1
            if character == UInt8(ascii: "=") {
                if paddingAt == nil { paddingAt = offset }
                continue
            }
            guard alphabet.contains(character) else {
                let shown =
                    (0x21...0x7E).contains(character)
                    ? "'\(Character(UnicodeScalar(character)))'" : "byte \(character)"
                return "\(shown) at offset \(offset) is not a base64 character"
            }
            if let paddingAt { return "'=' at offset \(paddingAt) is padding, which only ends the text" }
        }
        let padding = paddingAt.map { offset in input[offset...].filter { $0 == UInt8(ascii: "=") }.count } ?? 0
        let counted = characters == 1 ? "1 character" : "\(characters) characters"
        let equals = padding == 0 ? "none" : "\(padding)"
        let verb = characters == 1 ? "is" : "are"
        return "\(counted) (\(equals) of them '=') \(verb) not base64: with padding, base64 text is a "
            + "multiple of 4 characters and ends in at most two '='; without, it is never one more than a multiple of 4"
    }
}
