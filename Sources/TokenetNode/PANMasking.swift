/// Masks anything that looks like a card number (PAN) so it can be written to a log.
///
/// A run of 13 or more ASCII digits (PANs are 13–19 digits) keeps only its last four digits visible. A single
/// space, hyphen, dot, underscore, tab or line break between digit groups counts as part of the run, so
/// `4111 1111 1111 1111`, `4111-1111-1111-1111` and `4111.1111.1111.1111` are masked too: a PAN reaches a log through
/// whatever a caller typed or pasted (an unknown push session id is echoed in its error), not only in its usual
/// forms. Runs longer than 19 digits are masked as well: a PAN glued to other digits must not leak either.
/// Separators are kept, so the masked text still lines up with the original.
public func maskPAN(_ text: String) -> String {
    let bytes = Array(text.utf8)
    var output = bytes
    var masked = false
    var index = 0
    while index < bytes.count {
        guard isDigit(bytes[index]) else {
            index += 1
            continue
        }
        // Extend the run over digits and single separators that sit between two digits.
        var end = index
        var digitPositions: [Int] = []
        while end < bytes.count {
            if isDigit(bytes[end]) {
                digitPositions.append(end)
                end += 1
            } else if isSeparator(bytes[end]), end + 1 < bytes.count, isDigit(bytes[end + 1]) {
                end += 1
            } else {
                break
            }
        }
        if digitPositions.count >= 13 {
            for position in digitPositions.dropLast(4) {
                output[position] = UInt8(ascii: "*")
            }
            masked = true
        }
        index = end
    }
    return masked ? String(decoding: output, as: UTF8.self) : text
}

private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

private func isSeparator(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "\t"),
        UInt8(ascii: "\n"), UInt8(ascii: "\r"):
        true
    default:
        false
    }
}
