/// An HOTP generator (RFC 4226): HMAC-SHA-1 over the 8-byte big-endian counter, dynamic truncation to 31 bits, the
/// last 6 or 8 decimal digits. Pure apart from the HMAC; both the app that computes codes and the server that checks
/// them use it.
public struct HOTP: Sendable {
    /// The digit counts RFC 4226 allows Tokenet credentials to use.
    public static let allowedDigits: Set<Int> = [6, 8]
    /// RFC 4226 section 4 requires at least 128 bits of shared secret.
    public static let minimumSecretSize = 16

    public let secret: [UInt8]
    public let digits: Int

    public init(secret: [UInt8], digits: Int = 6) throws(CardError) {
        guard Self.allowedDigits.contains(digits) else {
            throw CardError(.invalidKey, "an HOTP credential has 6 or 8 digits, not \(digits)")
        }
        guard secret.count >= Self.minimumSecretSize else {
            throw CardError(
                .invalidKey,
                "an HOTP secret is at least \(Self.minimumSecretSize) bytes; this one has \(secret.count)")
        }
        self.secret = secret
        self.digits = digits
    }

    /// The code for `counter`, zero-padded to `digits` characters.
    public func code(counter: UInt64) throws(CardError) -> String {
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
        let value = Self.truncate(try HMAC.code(.sha1, key: secret, message: message))
        let modulus: UInt32 = digits == 8 ? 100_000_000 : 1_000_000
        let text = String(value % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// Dynamic truncation (RFC 4226 section 5.3): the low nibble of the last byte picks four bytes, whose top bit is
    /// dropped so the result reads the same as a signed or unsigned integer.
    public static func truncate(_ hmac: [UInt8]) -> UInt32 {
        precondition(hmac.count == 20, "HOTP truncates an HMAC-SHA-1 output")
        let offset = Int(hmac[19] & 0x0f)
        return (UInt32(hmac[offset] & 0x7f) << 24) | (UInt32(hmac[offset + 1]) << 16)
            | (UInt32(hmac[offset + 2]) << 8) | UInt32(hmac[offset + 3])
    }
}
