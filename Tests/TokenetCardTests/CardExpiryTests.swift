import Foundation
import Testing

@testable import TokenetCard

@Suite struct CardExpiryTests {
    @Test func parsesMMYY() throws {
        let expiry = try CardExpiry(parsing: "09/27")
        #expect(expiry.month == 9)
        #expect(expiry.year == 2027)
        #expect("\(expiry)" == "09/27")
        #expect(try CardExpiry(parsing: "12/00") == CardExpiry(month: 12, year: 2000))
    }

    @Test(arguments: ["", "1/27", "12/2027", "12-27", "ab/cd", "1a/27", "+1/27", "12/+7", "12/27/01", " 12/27", "/"])
    func malformed(_ text: String) {
        #expect(throws: CardError(rejection: .malformedExpiry)) { try CardExpiry(parsing: text) }
    }

    @Test(arguments: [0, 13, 99])
    func invalidMonth(_ month: Int) {
        let text = (month < 10 ? "0\(month)" : "\(month)") + "/27"
        #expect(throws: CardError(rejection: .invalidExpiryMonth(month))) { try CardExpiry(parsing: text) }
    }

    /// A card is valid through the last second of its expiry month (UTC).
    @Test(arguments: [
        ("12/27", "2027-12-31T23:59:59Z", false), ("12/27", "2028-01-01T00:00:00Z", true),
        ("12/27", "2027-12-01T00:00:00Z", false), ("12/27", "2027-11-30T12:00:00Z", false),
        ("02/28", "2028-02-29T23:59:59Z", false), ("02/28", "2028-03-01T00:00:00Z", true),
        ("01/26", "2025-12-31T23:59:59Z", false), ("01/26", "2026-02-01T00:00:00Z", true),
        ("06/20", "2026-06-15T00:00:00Z", true),
    ])
    func hasPassed(_ text: String, _ moment: String, _ passed: Bool) throws {
        #expect(try CardExpiry(parsing: text).hasPassed(asOf: Fixtures.utc(moment)) == passed)
    }

    @Test func endOfValidityAndArithmetic() throws {
        #expect(try CardExpiry(month: 12, year: 2027).endOfValidity == Fixtures.utc("2028-01-01T00:00:00Z"))
        #expect(try CardExpiry(month: 3, year: 2029).endOfValidity == Fixtures.utc("2029-04-01T00:00:00Z"))
        #expect(try CardExpiry(month: 11, year: 2026).adding(months: 2) == CardExpiry(month: 1, year: 2027))
        #expect(try CardExpiry(month: 1, year: 2027).adding(months: -1) == CardExpiry(month: 12, year: 2026))
        #expect(try CardExpiry(month: 1, year: 2027).adding(months: -13) == CardExpiry(month: 12, year: 2025))
        #expect(try CardExpiry(month: 3, year: 2026).adding(months: 36) == CardExpiry(month: 3, year: 2029))
        #expect(try CardExpiry(month: 1, year: 2027) < CardExpiry(month: 2, year: 2027))
    }
}

@Suite struct CardEligibilityTests {
    static let now = Fixtures.utc("2026-11-30T12:00:00Z")

    @Test(
        arguments: [
            ("4111111111111111", "12/27", nil),
            ("5555555555554444", "11/26", nil),
            ("4111 1111 1111 1111", "12/27", CardRejection.nonDigitCharacters),
            ("411111111111", "12/27", .invalidLength(12)),
            ("4111111111111112", "12/27", .luhnCheckFailed),
            ("378282246310005", "12/27", .unsupportedScheme),
            ("6011111111111117", "12/27", .unsupportedScheme),
            ("4111111111111111", "1227", .malformedExpiry),
            ("4111111111111111", "13/27", .invalidExpiryMonth(13)),
            ("4111111111111111", "10/26", .expired(try! CardExpiry(month: 10, year: 2026))),
        ] as [(String, String, CardRejection?)])
    func evaluate(_ number: String, _ expiry: String, _ rejection: CardRejection?) throws {
        let result = CardEligibility.evaluate(accountNumber: number, expiry: expiry, asOf: Self.now)
        #expect(result.rejection == rejection)
        if rejection == nil {
            #expect(result == .eligible(try PAN(number), try PAN(number).scheme, try CardExpiry(parsing: expiry)))
        }
    }

    @Test func evaluateCardData() throws {
        func card(_ number: String, _ month: String, _ year: String) -> CardData {
            CardData(accountNumber: number, expirationDate: .init(month: month, year: year))
        }
        let eligible = CardEligibility.evaluate(card("5555555555554444", "11", "2026"), asOf: Self.now)
        #expect(eligible == .eligible(try PAN("5555555555554444"), .mastercard, try CardExpiry(month: 11, year: 2026)))
        let cases: [(CardData, CardRejection)] = [
            (card("4111111111111112", "12", "2027"), .luhnCheckFailed),
            (card("6011111111111117", "12", "2027"), .unsupportedScheme),
            (card("4111111111111111", "12", "27"), .malformedExpirationDate),
            (card("4111111111111111", "12", "1999"), .malformedExpirationDate),
            (card("4111111111111111", "December", "2027"), .malformedExpirationDate),
            (card("4111111111111111", "00", "2027"), .invalidExpiryMonth(0)),
            (card("4111111111111111", "09", "2026"), .expired(try CardExpiry(month: 9, year: 2026))),
            // Card data gives the month as two digits, as its format says.
            (card("4111111111111111", "9", "2027"), .malformedExpirationDate),
        ]
        for (data, rejection) in cases {
            #expect(CardEligibility.evaluate(data, asOf: Self.now).rejection == rejection)
        }
    }

    @Test func rejectionMessagesAreDistinct() {
        let all: [CardRejection] = [
            .nonDigitCharacters, .invalidLength(12), .luhnCheckFailed, .unsupportedScheme, .malformedExpiry,
            .malformedExpirationDate, .invalidExpiryMonth(13), .expired(try! CardExpiry(month: 10, year: 2026)),
        ]
        #expect(Set(all.map(\.message)).count == all.count)
        #expect(CardRejection.expired(try! CardExpiry(month: 10, year: 2026)).message.contains("10/26"))
        #expect(CardRejection.invalidLength(12).message.contains("12 digits"))
    }
}
