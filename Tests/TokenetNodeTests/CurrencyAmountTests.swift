import Testing

@testable import TokenetNode

/// Amounts travel in their currency's minor units (ISO 4217), which are not always cents.
@Suite struct CurrencyAmountTests {
    @Test(arguments: [
        (1250 as Int64, "USD", "12.50 USD"), (5, "EUR", "0.05 EUR"), (1250, "JPY", "1250 JPY"),
        (1250, "KWD", "1.250 KWD"), (7, "CLF", "0.0007 CLF"), (-300, "USD", "-3.00 USD"), (1250, "", "12.50"),
        (1250, "jpy", "1250 jpy"), (.max, "USD", "92233720368547758.07 USD"),
    ])
    func formats(minor: Int64, currency: String, text: String) {
        #expect(CurrencyAmount.format(minor, currency) == text)
    }

    @Test func parsesInTheCurrencysMinorUnits() {
        #expect(CurrencyAmount.parse("12.50", currency: "USD") == .success(1250))
        #expect(CurrencyAmount.parse("12.5", currency: "EUR") == .success(1250))
        #expect(CurrencyAmount.parse("7", currency: "USD") == .success(700))
        #expect(CurrencyAmount.parse("1250", currency: "JPY") == .success(1250))
        #expect(CurrencyAmount.parse("1.25", currency: "KWD") == .success(1250))
        #expect(CurrencyAmount.parse("9999999999.99", currency: "USD") == .success(999_999_999_999))
        #expect(CurrencyAmount.parse("999999999999", currency: "JPY") == .success(999_999_999_999))
    }

    /// ISO 4217 codes in use, in either case; three letters that are none (XYZ) are refused, as is a code of old.
    @Test func knowsTheCodesInUse() {
        for code in ["USD", "eur", "JPY", "KWD", "XTS", "CHF", "ZWG"] {
            #expect(CurrencyAmount.isCode(code), "\(code)")
        }
        for code in ["XYZ", "US", "USDD", "DEM", "", "ÄBC", "XXX", "XAU"] {
            #expect(!CurrencyAmount.isCode(code), "\(code)")
        }
    }

    @Test func refusesWhatIsNoAmountOfTheCurrency() {
        #expect(CurrencyAmount.parse("12.5", currency: "JPY") == .failure(.tooManyDecimals(0)))
        #expect(CurrencyAmount.parse("12.345", currency: "USD") == .failure(.tooManyDecimals(2)))
        #expect(CurrencyAmount.parse("0.00", currency: "USD") == .failure(.notPositive))
        for text in ["", ".5", "1.", "+5", "-5", "1.2.3", "1,50", "١٢"] {
            #expect(CurrencyAmount.parse(text, currency: "USD") == .failure(.malformed), "\(text)")
        }
        // A payment carries at most 12 digits of minor units (ISO 8583); beyond an Int64 too.
        #expect(CurrencyAmount.parse("10000000000.00", currency: "USD") == .failure(.tooLarge("9999999999.99")))
        #expect(CurrencyAmount.parse("1000000000000", currency: "JPY") == .failure(.tooLarge("999999999999")))
        #expect(CurrencyAmount.parse("9223372036854775808", currency: "JPY") == .failure(.tooLarge("999999999999")))
    }
}
