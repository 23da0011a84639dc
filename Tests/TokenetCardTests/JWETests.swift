import Foundation
import Testing

@testable import TokenetCard

@Suite struct JWETests {
    static let keyring = TSPKeyring(current: Fixtures.key)
    static let card = CardData(
        accountNumber: "4111111111111111",
        expirationDate: .init(month: "12", year: "2027"),
        cvv2: "123",
        name: "Ada Lovelace"
    )

    static func parts(_ compact: String) -> [String] {
        compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// Decodes part `index`, lets `change` alter the bytes, and re-encodes it canonically.
    static func altering(_ compact: String, part index: Int, _ change: (inout [UInt8]) -> Void) -> String {
        var parts = parts(compact)
        var bytes = Base64URL.decode(parts[index])!
        change(&bytes)
        parts[index] = Base64URL.encode(bytes)
        return parts.joined(separator: ".")
    }

    static func replacingHeader(_ compact: String, with json: String) -> String {
        var parts = parts(compact)
        parts[0] = Base64URL.encode(Array(json.utf8))
        return parts.joined(separator: ".")
    }

    static func code(_ compact: String) -> CardError.Code? {
        do {
            _ = try JWE.decrypt(compact, with: keyring)
            return nil
        } catch {
            return error.code
        }
    }

    static func error(_ compact: String) -> CardError? {
        do {
            _ = try JWE.decrypt(compact, with: keyring)
            return nil
        } catch {
            return error
        }
    }

    @Test func roundTrip() throws {
        for plaintext in [[], [0], Array("hello".utf8), (0..<5000).map { UInt8($0 % 251) }] as [[UInt8]] {
            let compact = try JWE.encrypt(plaintext, to: Fixtures.key.publicKey, kid: Fixtures.key.kid)
            let (kid, decrypted) = try JWE.decrypt(compact, with: Self.keyring)
            #expect(kid == Fixtures.key.kid)
            #expect(decrypted == plaintext)
            #expect(try JWE.decrypt(compact, with: Fixtures.key) == plaintext)
        }
    }

    @Test func compactFormAndHeader() throws {
        let compact = try JWE.encrypt(Array("x".utf8), to: Fixtures.key.publicKey, kid: "key/1")
        let parts = Self.parts(compact)
        #expect(parts.count == 5)
        #expect(!compact.contains("=") && !compact.contains("+") && !compact.contains("/"))
        let header = String(decoding: Base64URL.decode(parts[0])!, as: UTF8.self)
        #expect(header == #"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"key/1"}"#)
        #expect(Base64URL.decode(parts[1])!.count == 256)
        #expect(Base64URL.decode(parts[2])!.count == 12)
        #expect(Base64URL.decode(parts[3])!.count == 1)
        #expect(Base64URL.decode(parts[4])!.count == 16)
    }

    /// Two encryptions of the same data share nothing but the header (fresh CEK and IV each time).
    @Test func freshKeyAndIVPerMessage() throws {
        let a = Self.parts(try JWE.encrypt(Array("same".utf8), to: Fixtures.key.publicKey))
        let b = Self.parts(try JWE.encrypt(Array("same".utf8), to: Fixtures.key.publicKey))
        #expect(a[0] == b[0])
        #expect(a[1] != b[1])
        #expect(a[2] != b[2])
        #expect(a[3] != b[3])
    }

    @Test func cardDataRoundTrip() throws {
        let compact = try JWE.encrypt(Self.card, to: Fixtures.key.publicKey)
        let (kid, card) = try JWE.decryptCardData(compact, with: Self.keyring)
        #expect(kid == Fixtures.key.kid)
        #expect(card == Self.card)
        #expect(try card.pan().last4 == "1111")
        #expect(try card.expiry() == CardExpiry(month: 12, year: 2027))
    }

    @Test func cardDataJSONShape() throws {
        let minimal = CardData(accountNumber: "4111111111111111", expirationDate: .init(month: "01", year: "2030"))
        let json = String(decoding: try minimal.jsonBytes(), as: UTF8.self)
        #expect(json == #"{"accountNumber":"4111111111111111","expirationDate":{"month":"01","year":"2030"}}"#)
        let reordered =
            #"{"name":"A B","cvv2":"999","expirationDate":{"year":"2031","month":"02"},"#
            + #""accountNumber":"5555555555554444"}"#
        let full = try CardData(json: Array(reordered.utf8))
        #expect(full.cvv2 == "999")
        #expect(full.name == "A B")
        #expect(try full.expiry() == CardExpiry(month: 2, year: 2031))
    }

    @Test(arguments: [
        ("not json", "not a JSON card-data object"),
        ("[1,2]", "not a JSON card-data object"),
        (#"{"expirationDate":{"month":"12","year":"2027"}}"#, "no \"accountNumber\" field"),
        (#"{"accountNumber":"4111111111111111"}"#, "no \"expirationDate\" field"),
        (#"{"accountNumber":4111111111111111,"expirationDate":{"month":"12","year":"2027"}}"#, "wrong type"),
        (#"{"accountNumber":"4111111111111111","expirationDate":{"month":null,"year":"2027"}}"#, "is null"),
        // Two account numbers: Foundation's decoder kept one without a word.
        (
            #"{"accountNumber":"4111111111111111","expirationDate":{"month":"12","year":"2027"},"#
                + #""accountNumber":"4761000010000009"}"#,
            "names \"accountNumber\" twice"
        ),
        (
            #"{"accountNumber":"4111111111111111","expirationDate":{"month":"12","month":"01","year":"2027"}}"#,
            "names \"expirationDate.month\" twice"
        ),
        // A name that is not one of letters is not echoed: it could hold a card number.
        (
            #"{"accountNumber":"4111111111111111","expirationDate":{"month":"12","year":"2027"},"#
                + #""4111111111111111":1,"4111111111111111":2}"#,
            "names a field twice"
        ),
    ])
    func badPayloads(_ payload: String, _ fragment: String) throws {
        let compact = try JWE.encrypt(Array(payload.utf8), to: Fixtures.key.publicKey)
        do {
            _ = try JWE.decryptCardData(compact, with: Self.keyring)
            Issue.record("accepted \(payload)")
        } catch {
            #expect(error.code == .invalidPayload)
            #expect(error.message.contains(fragment), "\(error.message)")
            #expect(!error.message.contains("4111111111111111"))
        }
    }

    // MARK: Tampering: each part fails with its own error.

    @Test func tamperedHeaderFailsAuthentication() throws {
        let kid = Fixtures.key.kid
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        // Same meaning, different bytes: the AAD changes, so the tag no longer verifies.
        let reformatted = #"{"alg": "RSA-OAEP-256", "enc": "A256GCM", "kid": "\#(kid)"}"#
        let extended = #"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"\#(kid)","x":1}"#
        for header in [reformatted, extended] {
            let error = Self.error(Self.replacingHeader(compact, with: header))
            #expect(error?.code == .authenticationFailed)
            #expect(error?.message.contains("GCM authentication failed") == true)
        }
    }

    @Test func tamperedHeaderFields() throws {
        let kid = Fixtures.key.kid
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        let cases: [(String, CardError.Code, String)] = [
            (#"{"alg":"RSA-OAEP","enc":"A256GCM","kid":"\#(kid)"}"#, .unsupportedAlgorithm, "alg is \"RSA-OAEP\""),
            (#"{"alg":"RSA1_5","enc":"A256GCM","kid":"\#(kid)"}"#, .unsupportedAlgorithm, "alg is \"RSA1_5\""),
            (#"{"enc":"A256GCM","kid":"\#(kid)"}"#, .unsupportedAlgorithm, "alg is missing"),
            (#"{"alg":"RSA-OAEP-256","enc":"A128GCM","kid":"\#(kid)"}"#, .unsupportedAlgorithm, "enc is \"A128GCM\""),
            (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"\#(kid)","zip":"DEF"}"#, .unsupportedAlgorithm, "zip"),
            (
                #"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"\#(kid)","crit":["exp"]}"#, .unsupportedAlgorithm,
                "critical"
            ),
            (#"{"alg":"RSA-OAEP-256","enc":"A256GCM"}"#, .unknownKeyID, "no kid"),
            (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"other-key"}"#, .unknownKeyID, "\"other-key\""),
            (#"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":7}"#, .malformedJWE, "protected header"),
            // A second kid (or alg) would be read by one reader and not by another.
            (
                #"{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"\#(kid)","kid":"zzz"}"#, .malformedJWE,
                "names \"kid\" twice"
            ),
            ("not json", .malformedJWE, "protected header"),
            ("[]", .malformedJWE, "protected header"),
        ]
        for (header, code, fragment) in cases {
            let error = Self.error(Self.replacingHeader(compact, with: header))
            #expect(error?.code == code, "\(header)")
            #expect(error?.message.contains(fragment) == true, "\(header): \(error?.message ?? "accepted")")
        }
    }

    @Test func tamperedEncryptedKeyFailsToUnwrap() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        for index in [0, 1, 100, 255] {
            let tampered = Self.altering(compact, part: 1) { $0[index] ^= 0x01 }
            let error = Self.error(tampered)
            #expect(error?.code == .keyUnwrapFailed)
            #expect(error?.message.contains("could not be unwrapped") == true)
        }
        #expect(Self.code(Self.altering(compact, part: 1) { $0.removeLast() }) == .keyUnwrapFailed)
        #expect(Self.code(Self.altering(compact, part: 1) { $0 = [] }) == .keyUnwrapFailed)
    }

    @Test func encryptedKeyFromAnotherMessageFailsAuthentication() throws {
        let first = Self.parts(try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey))
        let second = Self.parts(try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey))
        let spliced = [first[0], second[1], first[2], first[3], first[4]].joined(separator: ".")
        #expect(Self.code(spliced) == .authenticationFailed)
    }

    @Test func tamperedIVCiphertextOrTagFailsAuthentication() throws {
        let compact = try JWE.encrypt(Array("card data payload".utf8), to: Fixtures.key.publicKey)
        for part in 2...4 {
            for index in [0, 5, 11] {
                let error = Self.error(Self.altering(compact, part: part) { $0[index] ^= 0x80 })
                #expect(error?.code == .authenticationFailed, "part \(part) byte \(index)")
                #expect(error?.message.contains("GCM authentication failed") == true)
            }
        }
        #expect(Self.code(Self.altering(compact, part: 3) { $0.append(0) }) == .authenticationFailed)
        #expect(Self.code(Self.altering(compact, part: 3) { $0.removeLast() }) == .authenticationFailed)
    }

    @Test func wrongSizedIVOrTagIsMalformed() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        let shortIV = Self.error(Self.altering(compact, part: 2) { $0.removeLast() })
        #expect(shortIV?.code == .malformedJWE)
        #expect(shortIV?.message.contains("initialization vector is 11 bytes") == true)
        let shortTag = Self.error(Self.altering(compact, part: 4) { $0.removeLast() })
        #expect(shortTag?.code == .malformedJWE)
        #expect(shortTag?.message.contains("tag is 15 bytes") == true)
    }

    // MARK: Malformed compact serialization.

    @Test func wrongPartCount() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        let parts = Self.parts(compact)
        for (text, count) in [
            ("", 1), (parts.prefix(4).joined(separator: "."), 4), (compact + ".", 6), (compact + ".AAAA", 6),
            ("a.b", 2),
        ] {
            let error = Self.error(text)
            #expect(error?.code == .malformedJWE)
            #expect(error?.message.contains("has \(count)") == true, "\(error?.message ?? "accepted")")
        }
    }

    @Test func badBase64URLNamesThePart() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.key.publicKey)
        let names = ["protected header", "encrypted key", "initialization vector", "ciphertext", "tag"]
        for index in 0..<5 {
            for corrupt in ["=", "+", "/", " ", "*"] {
                var parts = Self.parts(compact)
                parts[index] = corrupt + parts[index].dropFirst()
                let error = Self.error(parts.joined(separator: "."))
                #expect(error?.code == .malformedJWE)
                #expect(error?.message.contains("\(names[index]) (part \(index + 1))") == true)
            }
            var padded = Self.parts(compact)
            padded[index] += "=="
            #expect(Self.code(padded.joined(separator: ".")) == .malformedJWE)
        }
    }

    @Test func unknownKIDIsNamed() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.otherKey.publicKey)
        let error = Self.error(compact)
        #expect(error?.code == .unknownKeyID)
        #expect(error?.message.contains(Fixtures.otherKey.kid) == true)
        #expect(throws: CardError.self) { try JWE.decrypt(compact, with: Fixtures.key) }
    }

    /// A JWE encrypted to another key but labelled with our kid cannot be unwrapped.
    @Test func wrongKeyUnderOurKIDFailsToUnwrap() throws {
        let compact = try JWE.encrypt(Array("data".utf8), to: Fixtures.otherKey.publicKey, kid: Fixtures.key.kid)
        #expect(Self.code(compact) == .keyUnwrapFailed)
    }

    @Test func rotation() throws {
        let keyring = try TSPKeyring.generate()
        let oldKid = keyring.currentKid
        let beforeRotation = try JWE.encrypt(Array("old".utf8), to: keyring.current.publicKey)

        let newKey = try keyring.rotate()
        #expect(keyring.currentKid == newKey.kid)
        #expect(newKey.kid != oldKid)
        #expect(keyring.retiredKids == [oldKid])

        let old = try JWE.decrypt(beforeRotation, with: keyring)
        #expect(old.kid == oldKid)
        #expect(old.plaintext == Array("old".utf8))

        let afterRotation = try JWE.encrypt(Array("new".utf8), to: keyring.current.publicKey)
        let header = String(decoding: Base64URL.decode(Self.parts(afterRotation)[0])!, as: UTF8.self)
        #expect(header.contains(newKey.kid))
        let new = try JWE.decrypt(afterRotation, with: keyring)
        #expect(new.kid == newKey.kid)
        #expect(new.plaintext == Array("new".utf8))

        let published = try keyring.publishedKeys()
        #expect(published.map(\.kid) == [newKey.kid, oldKid])
        #expect(published.map(\.isCurrent) == [true, false])
        #expect(try RSAPublicKey(pem: published[0].pem).kid == newKey.kid)

        #expect(keyring.forget(kid: oldKid))
        #expect(!keyring.forget(kid: newKey.kid))
        #expect(keyring.retiredKids.isEmpty)
        do {
            _ = try JWE.decrypt(beforeRotation, with: keyring)
            Issue.record("a forgotten key still decrypts")
        } catch {
            #expect(error.code == .unknownKeyID)
            #expect(error.message.contains(oldKid))
        }
        #expect(try JWE.decrypt(afterRotation, with: keyring).kid == newKey.kid)
    }

    /// Decryption from many tasks while the keyring rotates: every message made before or during the rotations still
    /// decrypts, because retired keys stay in the keyring.
    @Test func concurrentDecryptionDuringRotation() async throws {
        let keyring = TSPKeyring(current: Fixtures.key)
        let messages = try (0..<32).map { index in
            (index, try JWE.encrypt([UInt8(index)], to: keyring.current.publicKey))
        }
        let spare = Fixtures.otherKey
        let failures = await withTaskGroup(of: Int.self) { group in
            group.addTask {
                keyring.rotate(to: spare)
                return 0
            }
            for (index, compact) in messages {
                group.addTask {
                    guard let (_, plaintext) = try? JWE.decrypt(compact, with: keyring) else { return 1 }
                    return plaintext == [UInt8(index)] ? 0 : 1
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
        #expect(keyring.currentKid == spare.kid)
        #expect(keyring.retiredKids == [Fixtures.key.kid])
    }

    @Test func rotatingToTheCurrentKeyChangesNothingAndCopiesAreKeptOnce() throws {
        // A retired copy of the current key, and a key retired twice, as an interrupted rotation leaves on disk.
        let keyring = TSPKeyring(current: Fixtures.key, retired: [Fixtures.otherKey, Fixtures.key, Fixtures.otherKey])
        #expect(keyring.retiredKids == [Fixtures.otherKey.kid])
        #expect(try keyring.publishedKeys().map(\.kid) == [Fixtures.key.kid, Fixtures.otherKey.kid])
        keyring.rotate(to: Fixtures.key)
        #expect(keyring.currentKid == Fixtures.key.kid)
        keyring.rotate(to: Fixtures.otherKey)
        #expect(keyring.currentKid == Fixtures.otherKey.kid)
        #expect(keyring.retiredKids == [Fixtures.key.kid])
    }
}

@Suite struct Base64URLTests {
    @Test func knownVectors() {
        // RFC 4648 §10 vectors, unpadded.
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test func strictDecoding() {
        for bad in ["Zg==", "Z", "Zm9vY", "+/+/", "Zh", "Zm9=", "Zm 9v", "Zm9v\n"] {
            #expect(Base64URL.decode(bad) == nil, "\(bad)")
        }
    }

    @Test func randomRoundTrips() {
        var random = SystemRandomNumberGenerator()
        for length in 0..<100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }
}

@Suite struct JWEHeaderTextTests {
    /// A long header value is cut outside a number: a card number across the 100th character left its first digits,
    /// too few for the masking of the message, in clear.
    @Test func aLongHeaderValueIsNotCutInsideANumber() {
        let value = String(repeating: "k", count: 90) + "-4761739001010010-tail"
        #expect(JWEParts.printable(value) == String(repeating: "k", count: 90) + "…")
        let words = String(repeating: "kid ", count: 30)
        #expect(JWEParts.printable(words) == String(words.prefix(100)) + "…")
        #expect(JWEParts.printable("short") == "short")
    }
}
