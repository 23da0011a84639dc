extension PAN {
    /// The digits of a card number as a person types or pastes it, or nil when it is not one: groups of the digits
    /// 0-9 with spaces or one hyphen between two groups (`4111 1111 1111 1111`, `4111-1111-1111-1111`, as printed
    /// on the card; a paste may double a space), and spaces before or after the number ignored. A hyphen at either
    /// end or two between the same groups (`-4111…-`, `4111--1111`) is no way of writing a card number, and is
    /// refused rather than dropped.
    public static func digits(typed: String) -> String? {
        let space = UInt8(ascii: " ")
        let hyphen = UInt8(ascii: "-")
        let bytes = Array(typed.utf8)
        guard let first = bytes.firstIndex(where: { $0 != space }), let last = bytes.lastIndex(where: { $0 != space })
        else { return "" }
        var digits = ""
        digits.reserveCapacity(last - first + 1)
        var inGap = false
        var hyphenInGap = false
        for byte in bytes[first...last] {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits.unicodeScalars.append(Unicode.Scalar(byte))
                inGap = false
                hyphenInGap = false
            case space:
                inGap = true
            case hyphen:
                guard !digits.isEmpty, !hyphenInGap else { return nil }
                inGap = true
                hyphenInGap = true
            default:
                return nil
            }
        }
        return inGap ? nil : digits
    }

    /// What `digits(typed:)` takes, in words, for the refusal of anything else.
    public static let typedForm = "the digits 0-9, with spaces or one hyphen between groups"
}
