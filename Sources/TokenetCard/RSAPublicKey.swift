import COpenSSL

/// An RSA public key: the key a wallet or issuer encrypts card data to.
///
/// Its `kid` is the key fingerprint: the SHA-256 digest of the DER-encoded SubjectPublicKeyInfo, written as 64
/// lowercase hex digits. It is derived from the key alone, so every party computes the same id, and it can be checked
/// with `openssl pkey -pubin -in key.pem -outform DER | openssl dgst -sha256`.
public final class RSAPublicKey: Sendable, CustomStringConvertible {
    let key: EVPKey
    /// The DER SubjectPublicKeyInfo.
    public let derSubjectPublicKeyInfo: [UInt8]
    /// The key fingerprint (see the type's documentation), used as the JWE `kid`.
    public let kid: String
    /// The modulus size in bits.
    public let bits: Int

    /// The smallest modulus accepted for card-data encryption.
    public static let minimumBits = 2048

    init(key: EVPKey) throws(CardError) {
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else {
            throw CardError(.invalidKey, "the key is not an RSA key; card data is encrypted with RSA-OAEP-256")
        }
        let bits = Int(EVP_PKEY_get_bits(key.pointer))
        guard bits >= Self.minimumBits else {
            throw CardError(.invalidKey, "the RSA key has \(bits) bits; at least \(Self.minimumBits) are required")
        }
        self.key = key
        self.bits = bits
        self.derSubjectPublicKeyInfo = try Self.subjectPublicKeyInfo(of: key)
        self.kid = try Self.fingerprint(derSubjectPublicKeyInfo)
    }

    /// Loads a `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo) PEM.
    public convenience init(pem: String) throws(CardError) {
        // A private key sent where the public one goes is exposed once it has left its owner: said so, not as text
        // that is merely no public key.
        if pem.contains("PRIVATE KEY-----") {
            throw CardError(
                .invalidKey,
                "the text is a private key, which must never be sent to another party: make a new key pair (this one "
                    + "is no longer secret) and send its public key (-----BEGIN PUBLIC KEY-----)")
        }
        OpenSSLErrorQueue.clear()
        let bio = try MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = PEM_read_bio_PUBKEY(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            throw CardError.openSSL(.invalidKey, "the text is not a PEM public key (-----BEGIN PUBLIC KEY-----)")
        }
        try self.init(key: EVPKey(taking: pointer))
    }

    /// Loads a DER SubjectPublicKeyInfo.
    public convenience init(der: [UInt8]) throws(CardError) {
        OpenSSLErrorQueue.clear()
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            throw CardError.openSSL(.invalidKey, "the bytes are not a DER SubjectPublicKeyInfo")
        }
        try self.init(key: EVPKey(taking: parsed))
    }

    /// The key as a `-----BEGIN PUBLIC KEY-----` PEM.
    public func pem() throws(CardError) -> String {
        OpenSSLErrorQueue.clear()
        let bio = try MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, key.pointer) == 1 else {
            throw CardError.openSSL(.invalidKey, "the public key could not be written as PEM")
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    public var description: String { "RSAPublicKey(\(bits) bits, kid \(kid))" }

    /// RSA-OAEP with SHA-256 and MGF1-SHA-256 (JWE `RSA-OAEP-256`).
    func oaepEncrypt(_ plaintext: [UInt8]) throws(CardError) -> [UInt8] {
        OpenSSLErrorQueue.clear()
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_encrypt_init(context.pointer) == 1, RSAOAEP.configure(context) else {
            throw CardError.openSSL(.crypto, "RSA-OAEP-256 encryption could not be set up")
        }
        var length = 0
        guard EVP_PKEY_encrypt(context.pointer, nil, &length, plaintext, plaintext.count) == 1 else {
            throw CardError.openSSL(.crypto, "RSA-OAEP-256 encryption failed")
        }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(context.pointer, &output, &length, plaintext, plaintext.count) == 1 else {
            throw CardError.openSSL(.crypto, "RSA-OAEP-256 encryption failed")
        }
        return Array(output.prefix(length))
    }

    static func subjectPublicKeyInfo(of key: EVPKey) throws(CardError) -> [UInt8] {
        OpenSSLErrorQueue.clear()
        let length = i2d_PUBKEY(key.pointer, nil)
        guard length > 0 else { throw CardError.openSSL(.invalidKey, "the public key could not be encoded as DER") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key.pointer, &cursor)
        }
        guard written == length else {
            throw CardError.openSSL(.invalidKey, "the public key could not be encoded as DER")
        }
        return der
    }

    static func fingerprint(_ der: [UInt8]) throws(CardError) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        for byte in try SHA256.hash(der) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 15)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}

/// The RSA-OAEP-256 parameters, shared by encryption and decryption.
enum RSAOAEP {
    static func configure(_ context: PKeyContext) -> Bool {
        EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_oaep_md(context.pointer, EVP_sha256()) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(context.pointer, EVP_sha256()) == 1
    }
}
