/// The Luhn (mod 10) check used by every payment card number: it catches single-digit typing errors and most
/// adjacent transpositions, which is why a number failing it is rejected before any other processing.
public enum Luhn {
    /// True when `digits` (ASCII digits only) ends with a correct Luhn check digit. Non-digit input is invalid.
    public static func isValid(_ digits: some StringProtocol) -> Bool {
        let values = digits.utf8.map { Int($0) - 48 }
        guard !values.isEmpty, values.allSatisfy({ (0...9).contains($0) }) else { return false }
        return sum(values, doublingFromRightmost: false) % 10 == 0
    }

    /// The digit that makes `payload` followed by that digit Luhn-valid, or nil when `payload` is empty or has a
    /// non-digit character.
    public static func checkDigit(for payload: some StringProtocol) -> Character? {
        let values = payload.utf8.map { Int($0) - 48 }
        guard !values.isEmpty, values.allSatisfy({ (0...9).contains($0) }) else { return nil }
        let total = sum(values, doublingFromRightmost: true)
        return Character(String((10 - total % 10) % 10))
    }

    /// The Luhn sum; the rightmost digit is doubled when a check digit will be appended after it.
    private static func sum(_ values: [Int], doublingFromRightmost: Bool) -> Int {
        var total = 0
        var double = doublingFromRightmost
        for value in values.reversed() {
            if double {
                let doubled = value * 2
                total += doubled > 9 ? doubled - 9 : doubled
            } else {
                total += value
            }
            double.toggle()
        }
        return total
    }
}
