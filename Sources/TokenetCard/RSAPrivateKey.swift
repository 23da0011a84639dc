import COpenSSL
import Foundation

/// An RSA private key held by the token service provider to unwrap JWE content-encryption keys.
///
/// `description` never shows key material.
public final class RSAPrivateKey: Sendable, CustomStringConvertible {
    let key: EVPKey
    /// The matching public key; its `kid` identifies this key pair.
    public let publicKey: RSAPublicKey

    public var kid: String { publicKey.kid }

    private init(key: EVPKey) throws(CardError) {
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else {
            throw CardError(.invalidKey, "the key is not an RSA key; card data is encrypted with RSA-OAEP-256")
        }
        self.key = key
        // The public half is a separate object built from its DER, so the private key is never shared through it.
        self.publicKey = try RSAPublicKey(der: try RSAPublicKey.subjectPublicKeyInfo(of: key))
    }

    /// Generates a new key pair (2048 bits unless told otherwise; at least 2048).
    public static func generate(bits: Int = 2048) throws(CardError) -> RSAPrivateKey {
        guard bits >= RSAPublicKey.minimumBits, bits <= 16384 else {
            throw CardError(.invalidKey, "cannot generate a \(bits)-bit RSA key; use 2048 to 16384 bits")
        }
        OpenSSLErrorQueue.clear()
        let context = try PKeyContext(rsaKeygen: ())
        guard EVP_PKEY_keygen_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_keygen_bits(context.pointer, Int32(bits)) == 1
        else { throw CardError.openSSL(.crypto, "RSA key generation could not be set up") }
        var pointer: OpaquePointer?
        guard EVP_PKEY_keygen(context.pointer, &pointer) == 1, let pointer else {
            throw CardError.openSSL(.crypto, "RSA key generation failed")
        }
        return try RSAPrivateKey(key: EVPKey(taking: pointer))
    }

    /// Loads an unencrypted PEM private key (`BEGIN PRIVATE KEY` or `BEGIN RSA PRIVATE KEY`).
    /// Encrypted PEM is refused instead of prompting for a passphrase.
    public convenience init(pem: String) throws(CardError) {
        OpenSSLErrorQueue.clear()
        let bio = try MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            throw CardError.openSSL(
                .invalidKey,
                "the text is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)"
            )
        }
        // The public key's initializer refuses keys under 2048 bits.
        try self.init(key: EVPKey(taking: pointer))
    }

    /// Reads a PEM private key file.
    public convenience init(contentsOfFile path: String) throws(CardError) {
        // With the system's reason: a directory or a dangling link in a key's place read as a bare "cannot read".
        let bytes: [UInt8]
        do {
            bytes = try SecretFile.read(path).bytes
        } catch {
            throw CardError(.io, "the private key file: \(error.message)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        // The file is named: "the text is not an unencrypted PEM private key" left a node's operator guessing which
        // of its key files was damaged (an empty one, say, from a disk that filled up).
        do {
            try self.init(pem: text)
        } catch {
            throw CardError(
                error.code, "the private key file \(path) (\(text.utf8.count) bytes): \(error.message)",
                details: error.details, cause: error.cause)
        }
    }

    /// A key kept in a node's data directory, which other users must not be able to read: a key that decrypts what
    /// was sealed to it (every card's data, for the TSP's card keys) is refused with the command that fixes it, as
    /// the vault and access-token keys are.
    public convenience init(ownerOnlyFile path: String) throws(CardError) {
        if let problem = SecretFile.exposure(of: path, what: "the key file") { throw CardError(.invalidKey, problem) }
        try self.init(contentsOfFile: path)
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Store it with 0600 permissions.
    public func pem() throws(CardError) -> String {
        OpenSSLErrorQueue.clear()
        let bio = try MemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CardError.openSSL(.invalidKey, "the private key could not be written as PEM")
        }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// Writes the PEM to `path`, creating it with 0600 permissions (replacing an existing file).
    public func write(toFile path: String) throws(CardError) {
        try SecretFile.write(Array(try pem().utf8), to: path)
    }

    public var description: String { "RSAPrivateKey(\(publicKey.bits) bits, kid \(kid))" }

    /// RSA-OAEP-256 decryption; nil when the ciphertext does not decrypt under this key (wrong key or altered).
    func oaepDecrypt(_ ciphertext: [UInt8]) throws(CardError) -> [UInt8]? {
        OpenSSLErrorQueue.clear()
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_decrypt_init(context.pointer) == 1, RSAOAEP.configure(context) else {
            throw CardError.openSSL(.crypto, "RSA-OAEP-256 decryption could not be set up")
        }
        var length = 0
        guard EVP_PKEY_decrypt(context.pointer, nil, &length, ciphertext, ciphertext.count) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_decrypt(context.pointer, &output, &length, ciphertext, ciphertext.count) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return Array(output.prefix(length))
    }
}
