/// The issuer app's PIN policy: 4 to 8 decimal digits, not one digit repeated (1111) and not a run up or down
/// (1234, 4321, 8901), the PINs guessed first.
enum PINPolicy {
    static let lengths = 4...8

    static func check(_ pin: String) throws(IssuerError) {
        let digits = try checkForm(pin)
        let steps = Set(zip(digits, digits.dropFirst()).map { ($1 - $0 + 10) % 10 })
        if steps == [0] {
            throw IssuerError(.invalidArgument, "the PIN repeats one digit; choose one that is harder to guess")
        }
        if steps == [1] || steps == [9] {
            throw IssuerError(.invalidArgument, "the PIN is a run of digits; choose one that is harder to guess")
        }
    }

    /// The PIN's digits, when it has a PIN's form (4 to 8 digits): what any PIN the app holds has, whatever else
    /// the policy asked when it was set. Entered PINs without it are refused before they are compared, so a typing
    /// slip (`12`, `abcd`) uses none of the tries before the app locks.
    @discardableResult
    static func checkForm(_ pin: String) throws(IssuerError) -> [Int] {
        let digits = pin.unicodeScalars.compactMap { $0.isASCII ? Int($0.value) - 48 : nil }
        guard digits.count == pin.unicodeScalars.count, digits.allSatisfy({ (0...9).contains($0) }) else {
            throw IssuerError(.invalidArgument, "the PIN must be digits only")
        }
        guard lengths.contains(digits.count) else {
            throw IssuerError(.invalidArgument, "the PIN must be 4 to 8 digits, not \(digits.count)")
        }
        return digits
    }
}
