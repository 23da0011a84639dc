import Foundation

/// Reads base64 the way proto3 JSON writes `bytes`: the standard or the URL-safe alphabet (RFC 4648 §4 and §5), with
/// its `=` padding or without.
///
/// Written here rather than left to `Data(base64Encoded:)`, which skips `=` wherever it stands: `"===="` read as one
/// zero byte, `"AA=A"` as two and `"Zm9v=="` as `foo`, so a mistyped value went out as bytes nobody wrote. Padding is
/// taken only where it belongs, at the end of text whose length it makes a multiple of four; the unused bits of the
/// last character are not checked, as other proto3 JSON readers do not check them either.
public enum ProtoJSONBase64 {
    /// The bytes `text` encodes, or nil when it is not base64 in either alphabet.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var characters = Array(text.utf8)[...]
        let padding = characters.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        if padding > 0 {
            guard padding <= 2, characters.count % 4 == 0 else { return nil }
            characters = characters.dropLast(padding)
        }
        // One character holds six bits, less than a byte.
        guard characters.count % 4 != 1 else { return nil }
        // Into an array, then Data once: appending to Data a byte at a time made decoding megabytes slow.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        let decoded = values.withUnsafeBufferPointer { values -> Bool in
            for character in characters {
                let value = values[Int(character)]
                guard value != invalid else { return false }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                    accumulator &= (1 << UInt32(bits)) - 1
                }
            }
            return true
        }
        return decoded ? Data(bytes) : nil
    }

    /// Why `decode` refuses `text`, in words: the first character outside both alphabets, padding out of place,
    /// or a length no base64 text has. `decode` refused with "expected base64 text" alone, which left a person to
    /// find which of those it was.
    public static func problem(with text: some StringProtocol) -> String {
        let characters = Array(text.utf8)
        let padding = characters.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        let body = characters.dropLast(padding)
        if var index = body.firstIndex(where: { values[Int($0)] == invalid }) {
            var shown: String
            if body[index] == UInt8(ascii: "=") {
                shown = "'=' pads only the end"
                // Padding with something after it ("AQ==\n"): that something is what is out of place.
                if let after = body[index...].firstIndex(where: { $0 != UInt8(ascii: "=") }),
                    values[Int(body[after])] == invalid
                {
                    index = after
                    shown = describe(body[after]) + " after the padding"
                }
            } else {
                shown = describe(body[index])
            }
            return "\(shown) (at character \(index + 1); base64 is A-Z, a-z, 0-9 and + / or - _, with = at the end)"
        }
        if padding > 2 { return "\(padding) '=' at the end; padding is one or two" }
        if padding > 0, characters.count % 4 != 0 {
            return "padded base64 comes in groups of four characters, and this is \(characters.count) long"
        }
        if body.count % 4 == 1 {
            return "\(body.count) characters is no length of base64 (one too many, or a character missing)"
        }
        return "it is not base64"
    }

    /// A byte that is no base64 character, as a problem names it.
    private static func describe(_ character: UInt8) -> String {
        switch character {
        case 0x21..<0x7F: "'\(Character(Unicode.Scalar(character)))' is no base64 character"
        case 0x20: "a space is no base64 character"
        case ..<0x80: "a control character (byte \(character)) is no base64 character"
        default: "a byte outside ASCII is no base64 character"
        }
    }

    private static let invalid: UInt8 = 0xFF

    /// Each byte's six-bit value in either alphabet (`+` and `-` are 62, `/` and `_` are 63), `invalid` for the rest.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()
}
