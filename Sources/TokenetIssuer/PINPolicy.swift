/// The issuer app's PIN policy: 4 to 8 decimal digits, none of the patterns guessed first: one digit repeated
/// (1111), a run up or down (1234, 4321, 8901), digits an even step apart (2468, 1357, 9630), a block repeated (1212,
/// 123123) and digits doubled in turn (1122, 112233).
enum PINPolicy {
    static let lengths = 4...8

    static func check(_ pin: String) throws(IssuerError) {
        let digits = try checkForm(pin)
        if let pattern = trivialPattern(digits) {
            throw IssuerError(.invalidArgument, "the PIN \(pattern); choose one that is harder to guess")
        }
    }

    /// What makes `digits` easy to guess, as the end of "the PIN …"; nil when nothing does.
    static func trivialPattern(_ digits: [Int]) -> String? {
        let wrapped = Set(zip(digits, digits.dropFirst()).map { ($1 - $0 + 10) % 10 })
        if wrapped == [0] { return "repeats one digit" }
        if wrapped == [1] || wrapped == [9] { return "is a run of digits" }
        // Without the wrap: 1470, a column of the keypad read down, has steps 3, 3, -7 and is left to the person.
        let steps = Set(zip(digits, digits.dropFirst()).map { $1 - $0 })
        if steps.count == 1 { return "is digits an even step apart" }
        // At least twice, the last time perhaps cut short (12121, 12312312).
        for block in 1...(digits.count / 2) {
            if digits.indices.allSatisfy({ digits[$0] == digits[$0 % block] }) { return "repeats a block of digits" }
        }
        let pairs = stride(from: 0, to: digits.count - 1, by: 2).allSatisfy { digits[$0] == digits[$0 + 1] }
        if digits.count % 2 == 0, pairs { return "doubles each of its digits" }
        return nil
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
