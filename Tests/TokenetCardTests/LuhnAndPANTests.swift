import Foundation
import Testing

@testable import TokenetCard

@Suite struct LuhnTests {
    @Test(arguments: [
        "4111111111111111", "5555555555554444", "378282246310005", "4012888888881881", "79927398713",
        "2223003122003222", "5105105105105100", "6011111111111117", "0",
    ])
    func validNumbers(_ number: String) {
        #expect(Luhn.isValid(number))
    }

    @Test(arguments: [
        "4111111111111112", "79927398710", "1234567812345678", "5555555555554440", "", "4111-1111", "41111111111111a1",
    ])
    func invalidNumbers(_ number: String) {
        #expect(!Luhn.isValid(number))
    }

    @Test func checkDigits() {
        #expect(Luhn.checkDigit(for: "7992739871") == "3")
        #expect(Luhn.checkDigit(for: "411111111111111") == "1")
        #expect(Luhn.checkDigit(for: "555555555555444") == "4")
        #expect(Luhn.checkDigit(for: "") == nil)
        #expect(Luhn.checkDigit(for: "12a") == nil)
    }

    /// Every payload completed with its check digit is valid, and no other final digit is.
    @Test func checkDigitIsTheOnlyValidCompletion() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let payload = (0..<15).map { _ in String(random.next(upperBound: 10 as UInt8)) }.joined()
            let check = Luhn.checkDigit(for: payload)!
            for digit in "0123456789" {
                #expect(Luhn.isValid(payload + String(digit)) == (digit == check))
            }
        }
    }
}

@Suite struct PANTests {
    @Test func validPAN() throws {
        let pan = try PAN("4111111111111111")
        #expect(pan.digits == "4111111111111111")
        #expect(pan.length == 16)
        #expect(pan.scheme == .visa)
    }

    @Test func rejectionsNameTheFailedCheck() {
        #expect(PAN.rejection(for: "4111 1111 1111 1111") == .nonDigitCharacters)
        #expect(PAN.rejection(for: "4111-1111-1111-1111") == .nonDigitCharacters)
        #expect(PAN.rejection(for: "") == .invalidLength(0))
        #expect(PAN.rejection(for: "411111111111") == .invalidLength(12))
        #expect(PAN.rejection(for: "41111111111111111111") == .invalidLength(20))
        #expect(PAN.rejection(for: "4111111111111112") == .luhnCheckFailed)
        #expect(PAN.rejection(for: "４１１１") == .nonDigitCharacters)
        #expect(throws: CardError(rejection: .luhnCheckFailed)) { try PAN("4111111111111112") }
    }

    @Test func lengthLimits() {
        #expect(PAN.rejection(for: Fixtures.pan(prefix: "4", length: 13).digits) == nil)
        #expect(PAN.rejection(for: Fixtures.pan(prefix: "4", length: 19).digits) == nil)
    }

    @Test func maskingShowsOnlyTheLastFour() throws {
        let pan = try PAN("4111111111111111")
        #expect(pan.masked == "************1111")
        #expect(pan.last4 == "1111")
        let short = Fixtures.pan(prefix: "4", length: 13)
        #expect(short.masked == "*********" + short.digits.suffix(4))
    }

    /// Interpolation, printing, debug descriptions and dumps of a PAN, alone or inside collections and errors,
    /// never contain the full number.
    @Test func textFormsNeverContainTheNumber() throws {
        let number = "5555555555554444"
        let pan = try PAN(number)
        var dumped = ""
        dump(pan, to: &dumped)
        var dumpedArray = ""
        dump([pan], to: &dumpedArray)
        let forms = [
            "\(pan)", String(describing: pan), String(reflecting: pan), "\([pan])", "\(["k": pan])",
            "\(Optional(pan) as Any)", dumped, dumpedArray,
        ]
        for form in forms {
            #expect(!form.contains(number), "leaked in: \(form.replacingOccurrences(of: number, with: "<PAN>"))")
            #expect(!form.contains("555555555555"))
            #expect(form.contains("4444"))
        }
        for bad in ["5555555555554440", "5555 5555 5555 4444", "55555555555544441111"] {
            do {
                _ = try PAN(bad)
                Issue.record("accepted an invalid number")
            } catch {
                #expect(!"\(error)".contains("55555555"))
            }
        }
    }

    @Test func cardDataDescriptionMasksTheNumber() throws {
        let card = CardData(
            pan: try PAN("4111111111111111"), expiry: try CardExpiry(month: 12, year: 2027),
            cvv2: "123", name: "Ada Lovelace")
        for form in ["\(card)", String(reflecting: card), "\([card])"] {
            #expect(!form.contains("4111111111111111"))
            #expect(!form.contains("123,") && !form.contains("\"123\""))
            #expect(!form.contains("Ada"))
            #expect(form.contains("************1111"))
        }
    }
}

@Suite struct CardSchemeTests {
    @Test(arguments: [
        ("4", CardScheme.visa), ("49", .visa), ("3", .other), ("50", .other), ("51", .mastercard),
        ("55", .mastercard), ("56", .other), ("2220", .other), ("2221", .mastercard), ("2720", .mastercard),
        ("2721", .other), ("2599", .mastercard), ("2221999", .mastercard), ("27209", .mastercard), ("6011", .other),
        ("34", .other), ("37", .other), ("1", .other), ("0", .other),
    ])
    func schemeFromBIN(_ prefix: String, _ scheme: CardScheme) {
        for length in [13, 16, 19] {
            #expect(Fixtures.pan(prefix: prefix, length: length).scheme == scheme, "prefix \(prefix)")
        }
    }

    @Test func eligibility() {
        #expect(CardScheme.visa.isEligible)
        #expect(CardScheme.mastercard.isEligible)
        #expect(!CardScheme.other.isEligible)
    }
}
