/// Masks cardholder contact details before they leave the issuer as ID&V destinations.
enum Masking {
    /// `+1 415 555 0101` → `***-***-0101`: only the last four digits stay.
    static func phone(_ phone: String) -> String {
        "***-***-" + String(phone.filter { $0.isASCII && $0.isNumber }.suffix(4))
    }

    /// `alice@example.com` → `a***@example.com`; nil when the text is not an email address.
    static func email(_ email: String) -> String? {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = parts[0].first, parts[1].contains(".") else { return nil }
        return "\(first)***@\(parts[1])"
    }
}
