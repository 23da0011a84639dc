import Foundation
import TokenetWire

/// JWE compact serialization (RFC 7516) for card data: `alg` RSA-OAEP-256 wraps a fresh 256-bit content-encryption
/// key (CEK), and `enc` A256GCM encrypts the payload with it.
///
/// The five parts are `BASE64URL(header) . BASE64URL(encrypted CEK) . BASE64URL(IV) . BASE64URL(ciphertext) .
/// BASE64URL(tag)`, unpadded. The protected header is `{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"…"}` and the
/// GCM additional authenticated data is the ASCII of its base64url form, so altering the header breaks the tag.
public enum JWE {
    public static let algorithm = "RSA-OAEP-256"
    public static let encryption = "A256GCM"

    /// Encrypts `plaintext` to `key`, naming it `kid` in the protected header.
    public static func encrypt(_ plaintext: [UInt8], to key: RSAPublicKey, kid: String) throws(CardError) -> String {
        let header = try JWEHeader(alg: algorithm, enc: encryption, kid: kid).encoded()
        let cek = try SecureRandom.bytes(AESGCM.keySize)
        let iv = try SecureRandom.bytes(AESGCM.nonceSize)
        let encryptedKey = try key.oaepEncrypt(cek)
        let aad = Array(header.utf8)
        let (ciphertext, tag) = try AESGCM.seal(plaintext, key: cek, nonce: iv, associatedData: aad)
        return [
            header, Base64URL.encode(encryptedKey), Base64URL.encode(iv), Base64URL.encode(ciphertext),
            Base64URL.encode(tag),
        ].joined(separator: ".")
    }

    /// Encrypts to `key` under its own fingerprint as `kid`.
    public static func encrypt(_ plaintext: [UInt8], to key: RSAPublicKey) throws(CardError) -> String {
        try encrypt(plaintext, to: key, kid: key.kid)
    }

    /// Encrypts card data as its JSON payload.
    public static func encrypt(_ card: CardData, to key: RSAPublicKey, kid: String? = nil) throws(CardError) -> String {
        try encrypt(try card.jsonBytes(), to: key, kid: kid ?? key.kid)
    }

    /// Decrypts with the keyring key named by the header's `kid`.
    public static func decrypt(
        _ compact: String,
        with keyring: TSPKeyring
    ) throws(CardError) -> (kid: String, plaintext: [UInt8]) {
        let parts = try JWEParts(compact)
        guard let key = keyring.key(for: parts.header.kid) else {
            throw CardError(
                .unknownKeyID,
                "no decryption key has kid \"\(JWEParts.printable(parts.header.kid))\"; the sender may be using "
                    + "a key that was retired and forgotten, or a key of another service "
                    + "(current kid \(keyring.currentKid))"
            )
        }
        return (parts.header.kid, try parts.decrypt(with: key))
    }

    /// Decrypts with one private key, which must be the key named by the header's `kid`.
    public static func decrypt(_ compact: String, with key: RSAPrivateKey) throws(CardError) -> [UInt8] {
        let parts = try JWEParts(compact)
        guard parts.header.kid == key.kid else {
            throw CardError(
                .unknownKeyID,
                "the JWE is for kid \"\(JWEParts.printable(parts.header.kid))\", not for kid \"\(key.kid)\"")
        }
        return try parts.decrypt(with: key)
    }

    /// Decrypts and parses a card-data payload.
    public static func decryptCardData(
        _ compact: String,
        with keyring: TSPKeyring
    ) throws(CardError) -> (kid: String, card: CardData) {
        let (kid, plaintext) = try decrypt(compact, with: keyring)
        return (kid, try CardData(json: plaintext))
    }
}

/// The protected header fields this implementation reads.
struct JWEHeader: Codable {
    var alg: String?
    var enc: String?
    var kid: String?
    var zip: String?
    var crit: [String]?

    init(alg: String, enc: String, kid: String) {
        self.alg = alg
        self.enc = enc
        self.kid = kid
    }

    /// The base64url of `{"alg":…,"enc":…,"kid":…}` (keys in that order, no whitespace).
    func encoded() throws(CardError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Base64URL.encode(try encoder.encode(self))
        } catch {
            throw CardError(.malformedJWE, "the JWE header could not be encoded", cause: error)
        }
    }
}

/// A compact JWE split and checked up to, but not including, the cryptography.
struct JWEParts {
    struct Header {
        let kid: String
    }

    let header: Header
    /// The ASCII of the base64url protected header: the GCM additional authenticated data.
    let aad: [UInt8]
    let encryptedKey: [UInt8]
    let iv: [UInt8]
    let ciphertext: [UInt8]
    let tag: [UInt8]

    private static let names = ["protected header", "encrypted key", "initialization vector", "ciphertext", "tag"]

    init(_ compact: String) throws(CardError) {
        let fields = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard fields.count == 5 else {
            throw CardError(
                .malformedJWE,
                "a compact JWE has 5 base64url parts separated by '.', but this one has \(fields.count)"
            )
        }
        var decoded: [[UInt8]] = []
        for (index, field) in fields.enumerated() {
            guard let bytes = Base64URL.decode(field) else {
                throw CardError(
                    .malformedJWE,
                    "the JWE \(Self.names[index]) (part \(index + 1)) is not unpadded base64url"
                )
            }
            decoded.append(bytes)
        }
        let parsed: JWEHeader
        do {
            parsed = try JSONDecoder().decode(JWEHeader.self, from: Data(decoded[0]))
        } catch {
            throw CardError(.malformedJWE, "the JWE protected header is not a JSON object with string alg/enc/kid")
        }
        // Foundation's decoder keeps one of two values of a name, where another reader may keep the other.
        if let repeated = try? JSONValue(parsing: String(decoding: decoded[0], as: UTF8.self)).firstRepeatedKey {
            throw CardError(.malformedJWE, "the JWE protected header names \(Self.quoted(repeated)) twice")
        }
        guard parsed.alg == JWE.algorithm else {
            throw CardError(
                .unsupportedAlgorithm,
                "the JWE alg is \(Self.quoted(parsed.alg)); only \"\(JWE.algorithm)\" is supported"
            )
        }
        guard parsed.enc == JWE.encryption else {
            throw CardError(
                .unsupportedAlgorithm,
                "the JWE enc is \(Self.quoted(parsed.enc)); only \"\(JWE.encryption)\" is supported"
            )
        }
        guard parsed.zip == nil else {
            throw CardError(.unsupportedAlgorithm, "JWE compression (zip \(Self.quoted(parsed.zip))) is not supported")
        }
        // RFC 7516 §4.1.13: a recipient must reject a JWE whose critical extensions it does not understand.
        if let crit = parsed.crit {
            throw CardError(
                .unsupportedAlgorithm,
                "the JWE marks header parameters \(crit) as critical; none are supported"
            )
        }
        guard let kid = parsed.kid, !kid.isEmpty else {
            throw CardError(.unknownKeyID, "the JWE protected header has no kid, so no decryption key can be chosen")
        }
        guard decoded[2].count == AESGCM.nonceSize else {
            throw CardError(
                .malformedJWE,
                "the JWE initialization vector is \(decoded[2].count) bytes; A256GCM uses 12"
            )
        }
        guard decoded[4].count == AESGCM.tagSize else {
            throw CardError(.malformedJWE, "the JWE tag is \(decoded[4].count) bytes; A256GCM uses 16")
        }
        self.header = Header(kid: kid)
        self.aad = Array(fields[0].utf8)
        self.encryptedKey = decoded[1]
        self.iv = decoded[2]
        self.ciphertext = decoded[3]
        self.tag = decoded[4]
    }

    func decrypt(with key: RSAPrivateKey) throws(CardError) -> [UInt8] {
        guard let cek = try key.oaepDecrypt(encryptedKey), cek.count == AESGCM.keySize else {
            throw CardError(
                .keyUnwrapFailed,
                "the JWE encrypted key could not be unwrapped with RSA-OAEP-256 by key \(key.kid); it was altered "
                    + "or encrypted to a different key"
            )
        }
        return try AESGCM.open(
            ciphertext,
            tag: tag,
            key: cek,
            nonce: iv,
            associatedData: aad,
            failure: "GCM authentication failed: the JWE protected header, initialization vector, ciphertext or tag "
                + "was altered"
        )
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\(printable($0))\"" } ?? "missing"
    }

    /// Header values come from the sender; long ones are cut so an error message stays readable. Never inside a
    /// number: a card number across the cut kept too few digits in the message for the masking of the logs and the
    /// node's status messages, which take 13 or more, and its first 12 were shown (as `ShownPrefix` cuts elsewhere).
    static func printable(_ value: String) -> String {
        guard value.count > 100 else { return value }
        var kept = value.prefix(100)
        let tail = kept.reversed().prefix { !$0.isLetter }
        if tail.contains(where: \.isNumber) { kept = kept.dropLast(tail.count) }
        return String(kept) + "…"
    }
}
