/// The Payment Account Reference (EMVCo PAR) of a card account: 29 characters, a BIN controller's identifier (4)
/// and 25 of 0-9 and A-Z. It links every token of an account, in every wallet and across the account's numbers,
/// without the card number: it is no secret, and is shown and logged as it is.
public enum PaymentAccountReference {
    /// The BIN controller identifier a new PAR starts with: V001 for Visa, 5001 for Mastercard, and T001, Tokenet's
    /// own, for any other scheme.
    public static func controller(of scheme: CardScheme) -> String {
        switch scheme {
        case .visa: "V001"
        case .mastercard: "5001"
        case .other: "T001"
        }
    }

    /// A new PAR for an account of `scheme`: its controller's identifier and 25 random characters (about 129 bits,
    /// so no two accounts share one).
    public static func new(for scheme: CardScheme) -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        var generator = SystemRandomNumberGenerator()
        return controller(of: scheme) + String((0..<25).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// Whether `value` has a PAR's form: 29 characters of 0-9 and A-Z.
    public static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == 29 && value.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) }
    }
}
