import Testing

@testable import TokenetCard

@Suite struct HOTPTests {
    /// RFC 4226 Appendix D: the secret "12345678901234567890" and counters 0…9.
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test func rfc4226AppendixDCodes() throws {
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489",
        ]
        let hotp = try HOTP(secret: Self.rfcSecret, digits: 6)
        for (counter, code) in expected.enumerated() {
            #expect(try hotp.code(counter: UInt64(counter)) == code, "counter \(counter)")
        }
    }

    @Test func rfc4226AppendixDTruncatedValues() throws {
        let expected: [UInt32] = [
            1_284_755_224, 1_094_287_082, 137_359_152, 1_726_969_429, 1_640_338_314, 868_254_676, 1_918_287_922,
            82_162_583, 673_399_871, 645_520_489,
        ]
        for (counter, value) in expected.enumerated() {
            let message = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(counter) >> (56 - 8 * UInt64($0))) }
            #expect(HOTP.truncate(try HMAC.code(.sha1, key: Self.rfcSecret, message: message)) == value)
        }
    }

    @Test func rfc4226AppendixDIntermediateHMAC() throws {
        let message = [UInt8](repeating: 0, count: 8)
        let hmac = try HMAC.code(.sha1, key: Self.rfcSecret, message: message)
        #expect(hex(hmac) == "cc93cf18508d94934c64b65d8ba7667fb7cde4b0")
    }

    @Test func eightDigitCodesKeepTheLastEightDigits() throws {
        // 1284755224 (counter 0) mod 10^8, 82162583 (counter 7) zero-padded.
        let hotp = try HOTP(secret: Self.rfcSecret, digits: 8)
        #expect(try hotp.code(counter: 0) == "84755224")
        #expect(try hotp.code(counter: 7) == "82162583")
    }

    @Test func refusesShortSecretsAndOddDigitCounts() {
        #expect(throws: CardError.self) { try HOTP(secret: Array(repeating: 1, count: 15)) }
        #expect(throws: CardError.self) { try HOTP(secret: Self.rfcSecret, digits: 7) }
    }

    @Test func hmacSHA256MatchesRFC4231TestCase2() throws {
        let code = try HMAC.code(
            .sha256, key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hex(code) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func pbkdf2SHA256KnownVector() throws {
        let key = try PBKDF2.sha256(
            password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1, length: 32)
        #expect(hex(key) == "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b")
    }

    @Test func constantTimeEqualsComparesContentAndLength() {
        #expect(HMAC.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!HMAC.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!HMAC.constantTimeEquals([1, 2, 3], [1, 2]))
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }
}
