/// An amount of money as the wire carries it: an integer count of its currency's minor units (ISO 4217), which are
/// cents for USD and EUR, but whole yen for JPY and thousandths (fils) for KWD.
///
/// Written and read with two decimals whatever the currency, 1,000 yen showed as "10.00 JPY" and `--amount 1000
/// --currency JPY` sent 100,000 yen.
public enum CurrencyAmount {
    /// The currencies whose minor unit is not a hundredth, with their number of decimals (ISO 4217's exponent).
    static let exponents: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0, "UGX": 0,
        "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
        "CLF": 4, "UYW": 4,
    ]

    /// Whether `code` is an ISO 4217 alphabetic code in use (either case), as the TSP takes a payment's currency
    /// and the CLI checks `--currency` before reading an amount in it. Three letters were taken before: XYZ paid.
    public static func isCode(_ code: String) -> Bool {
        code.count == 3 && codes.contains(code.uppercased())
    }

    /// ISO 4217's active alphabetic codes of currencies and funds, and XTS, its code for testing. Its precious
    /// metals, bond units, SDR and XXX (no currency) are left out: no card pays in them, and they have no minor unit.
    static let codes: Set<String> = Set(
        """
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD \
        CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS \
        GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT \
        LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD \
        OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC \
        SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XCD XCG \
        XOF XPF XTS YER ZAR ZMW ZWG ZWL
        """.split(separator: " ").map(String.init))

    /// The most minor units an amount may have: ISO 8583's amount field holds 12 digits.
    public static let largestMinor: Int64 = 999_999_999_999

    /// How many decimals an amount in `currency` has: 2 unless ISO 4217 gives it another exponent.
    public static func decimals(of currency: String) -> Int { exponents[currency.uppercased()] ?? 2 }

    /// `minor` in `currency`: "12.50 EUR", "1250 JPY", "1.250 KWD", "-3.00 USD"; without a currency, the number
    /// with two decimals.
    public static func format(_ minor: Int64, _ currency: String) -> String {
        let number = formatNumber(minor, decimals: decimals(of: currency))
        return currency.isEmpty ? number : "\(number) \(currency)"
    }

    static func formatNumber(_ minor: Int64, decimals: Int) -> String {
        let sign = minor < 0 ? "-" : ""
        let value = minor.magnitude
        guard decimals > 0 else { return "\(sign)\(value)" }
        var scale: UInt64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let fraction = String(value % scale)
        let padding = String(repeating: "0", count: decimals - fraction.count)
        return "\(sign)\(value / scale).\(padding)\(fraction)"
    }

    /// Why `parse` refused a text.
    public enum Refusal: Error, Equatable {
        /// Not digits with at most one decimal point.
        case malformed
        /// More decimals than the currency has (its number of decimals).
        case tooManyDecimals(Int)
        /// More than an Int64 of minor units holds (the largest amount, written).
        case tooLarge(String)
        /// Zero.
        case notPositive
    }

    /// "12.50" or "12.5" in EUR → 1250 cents; "1250" in JPY → 1250 yen; "1.25" in KWD → 1250 fils.
    public static func parse(_ text: String, currency: String) -> Result<Int64, Refusal> {
        let decimals = decimals(of: currency)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let digits = { (part: Substring) in part.utf8.allSatisfy { (48...57).contains($0) } }
        guard parts.count <= 2, !parts[0].isEmpty, digits(parts[0]),
            parts.count == 1 || !parts[1].isEmpty && digits(parts[1])
        else { return .failure(.malformed) }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= decimals else { return .failure(.tooManyDecimals(decimals)) }
        // A well-formed amount past what the minor units hold is named as too large, not as malformed.
        let tooLarge = Refusal.tooLarge(formatNumber(largestMinor, decimals: decimals))
        guard let whole = Int64(parts[0]) else { return .failure(tooLarge) }
        let fractionDigits = Array(fraction.utf8)
        var total = whole
        for index in 0..<decimals {
            let digit = index < fractionDigits.count ? Int64(fractionDigits[index] - UInt8(ascii: "0")) : 0
            let (shifted, overflow) = total.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = shifted.addingReportingOverflow(digit)
            guard !overflow, !overflowSum else { return .failure(tooLarge) }
            total = sum
        }
        guard total <= largestMinor else { return .failure(tooLarge) }
        guard total > 0 else { return .failure(.notPositive) }
        return .success(total)
    }
}
