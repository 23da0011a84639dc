import Foundation
import Testing

@testable import TokenetCard

@Suite struct TokenPANGeneratorTests {
    static let generator = try! TokenPANGenerator(ranges: [
        TokenBINRange("489537"), TokenBINRange(low: "522222", high: "522229"),
    ])

    @Test(arguments: [
        "4111111111111111", "4222222222222", "4000000000000000006", "5555555555554444", "2223003122003222",
        "5105105105105100",
    ])
    func tenThousandTokens(_ number: String) throws {
        let funding = try PAN(number)
        let range = Self.generator.ranges[funding.scheme]!
        var seen = Set<PAN>()
        for _ in 0..<10_000 {
            let token = try Self.generator.generate(for: funding)
            #expect(token.scheme == funding.scheme)
            #expect(token.length == funding.length)
            #expect(Luhn.isValid(token.digits))
            #expect(range.contains(token))
            #expect(token != funding)
            seen.insert(token)
        }
        // Random middle digits: a 16-digit token has 9 free digits, so 10,000 draws hardly ever repeat.
        if funding.length >= 16 { #expect(seen.count > 9_900) }
    }

    @Test func tokensSpreadOverTheWholeRange() throws {
        var bins = Set<String>()
        for _ in 0..<2_000 {
            bins.insert(String(try Self.generator.generate(for: try PAN("5555555555554444")).digits.prefix(6)))
        }
        #expect(bins == Set((522_222...522_229).map(String.init)))
    }

    /// With a 12-digit BIN range of ten BINs and 13-digit cards, only ten token numbers exist. The funding PAN is one
    /// of them: across 10,000 draws it never comes out, and the nine others all do.
    @Test func neverEqualToTheFundingPAN() throws {
        let range = try TokenBINRange(low: "489537000000", high: "489537000009")
        let generator = try TokenPANGenerator(ranges: [range])
        let candidates = (0...9).map { Fixtures.pan(prefix: "48953700000\($0)", length: 13) }
        let funding = candidates[4]
        var counts: [PAN: Int] = [:]
        for _ in 0..<10_000 { counts[try generator.generate(for: funding), default: 0] += 1 }
        #expect(counts[funding] == nil)
        #expect(Set(counts.keys) == Set(candidates).subtracting([funding]))
    }

    @Test func exhaustedRangeFailsInsteadOfLooping() throws {
        let generator = try TokenPANGenerator(ranges: [TokenBINRange("489537000000")])
        let only = Fixtures.pan(prefix: "489537000000", length: 13)
        do {
            _ = try generator.generate(for: only)
            Issue.record("generated a token equal to the funding PAN")
        } catch {
            #expect(error.code == .tokenConfiguration)
            #expect(error.message.contains("exhausted"))
        }
        let funding = try PAN("4222222222222")
        #expect(try generator.generate(for: funding) == only)
        #expect(throws: CardError.self) { try generator.generate(for: funding, isTaken: { $0 == only }) }
    }

    @Test func takenNumbersAreSkipped() throws {
        let range = try TokenBINRange(low: "489537000000", high: "489537000001")
        let generator = try TokenPANGenerator(ranges: [range])
        let taken = Fixtures.pan(prefix: "489537000000", length: 13)
        for _ in 0..<200 {
            let token = try generator.generate(for: try PAN("4222222222222"), isTaken: { $0 == taken })
            #expect(token == Fixtures.pan(prefix: "489537000001", length: 13))
        }
    }

    @Test func unsupportedFundingCards() throws {
        #expect(throws: CardError(rejection: .unsupportedScheme)) {
            try Self.generator.generate(for: try PAN("378282246310005"))
        }
        let visaOnly = try TokenPANGenerator(ranges: [TokenBINRange("489537")])
        do {
            _ = try visaOnly.generate(for: try PAN("5555555555554444"))
            Issue.record("issued a Mastercard token without a Mastercard range")
        } catch {
            #expect(error.code == .tokenConfiguration)
            #expect(error.message.contains("Mastercard"))
        }
    }

    @Test(arguments: [
        ("512345", "412345"), ("50", "50"), ("501234", "501234"), ("272099", "272100"), ("489537", "4895370"),
        ("48953a", "48953a"), ("378282", "378282"), ("549999", "560000"),
        // Both ends Mastercard, but in its two blocks, with Visa's and other schemes' BINs between them.
        ("272000", "510000"), ("2221", "5599"),
    ])
    func invalidRanges(_ low: String, _ high: String) {
        #expect(throws: CardError.self) { try TokenBINRange(low: low, high: high) }
    }

    @Test func duplicateSchemeRangesAreRefused() {
        #expect(throws: CardError.self) {
            try TokenPANGenerator(ranges: [TokenBINRange("489537"), TokenBINRange("411111")])
        }
    }
}

@Suite struct TokenExpiryTests {
    @Test(arguments: [
        ("2026-03-15T10:00:00Z", 3, 3, 2029), ("2026-12-31T23:59:59Z", 3, 12, 2029),
        ("2026-01-01T00:00:00Z", 3, 1, 2029),
        ("2024-02-29T12:00:00Z", 3, 2, 2027), ("2026-11-30T00:00:00Z", 1, 11, 2027),
    ])
    func expiry(_ issued: String, _ years: Int, _ month: Int, _ year: Int) throws {
        let expiry = TokenExpiry.expiry(issuedAt: Fixtures.utc(issued), years: years)
        #expect(expiry == (try CardExpiry(month: month, year: year)))
        #expect(!expiry.hasPassed(asOf: Fixtures.utc(issued)))
    }

    @Test func validThroughTheEndOfTheMonth() {
        let expiry = TokenExpiry.expiry(issuedAt: Fixtures.utc("2026-03-15T10:00:00Z"))
        #expect(expiry.endOfValidity == Fixtures.utc("2029-04-01T00:00:00Z"))
        #expect(!expiry.hasPassed(asOf: Fixtures.utc("2029-03-31T23:59:59Z")))
        #expect(expiry.hasPassed(asOf: Fixtures.utc("2029-04-01T00:00:00Z")))
    }
}

@Suite struct DigitalCardIDTests {
    @Test func visaTokenReferenceID() throws {
        let id = try #require(DigitalCardID.generate(for: .visa))
        #expect(id.rawValue.hasPrefix("DNITHE"))
        #expect(id.rawValue.count == 32)
        #expect(id.rawValue.dropFirst(6).allSatisfy { $0.isASCII })
        #expect(id.rawValue.dropFirst(6).allSatisfy { $0.isNumber })
        #expect(id.scheme == .visa)
    }

    @Test func mastercardTokenUniqueReference() throws {
        let id = try #require(DigitalCardID.generate(for: .mastercard))
        #expect(id.rawValue.hasPrefix("DWSPMC"))
        #expect(id.rawValue.count == 38)
        #expect(id.rawValue.dropFirst(6).allSatisfy { "0123456789abcdef".contains($0) })
        #expect(id.scheme == .mastercard)
        #expect(DigitalCardID.generate(for: .other) == nil)
    }

    /// No Mastercard id holds 13 decimal digits in a row, which logs and messages would mask as a card number when
    /// they pass the Luhn check (about one random id in 55 holds such a run).
    @Test func mastercardIdsHoldNoRunThatReadsAsACardNumber() {
        for _ in 0..<5_000 {
            let id = DigitalCardID.generate(for: .mastercard)!
            #expect(DigitalCardID.longestDigitRun(id.rawValue) < 13, "\(id)")
        }
        #expect(DigitalCardID.longestDigitRun("DWSPMC167d7380976a26444471842226505303") == 20)
    }

    @Test func idsAreUnique() {
        var ids = Set<DigitalCardID>()
        for _ in 0..<1_000 {
            ids.insert(DigitalCardID.generate(for: .visa)!)
            ids.insert(DigitalCardID.generate(for: .mastercard)!)
        }
        #expect(ids.count == 2_000)
    }

    @Test func parsing() throws {
        #expect(DigitalCardID(rawValue: "DNITHE" + String(repeating: "1", count: 26))?.scheme == .visa)
        #expect(DigitalCardID(rawValue: "DWSPMC" + String(repeating: "a", count: 32))?.scheme == .mastercard)
        for bad in [
            "", "DNITHE", "DNITHE" + String(repeating: "1", count: 25), "DNITHE" + String(repeating: "A", count: 26),
            "DWSPMC" + String(repeating: "g", count: 32), "DWSPMC" + String(repeating: "A", count: 32),
            "XXXXXX" + String(repeating: "1", count: 26),
        ] {
            #expect(DigitalCardID(rawValue: bad) == nil, "\(bad)")
        }
        let id = DigitalCardID.generate(for: .mastercard)!
        let json = try JSONEncoder().encode([id])
        #expect(try JSONDecoder().decode([DigitalCardID].self, from: json) == [id])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([DigitalCardID].self, from: Data(#"["x"]"#.utf8))
        }
    }
}
