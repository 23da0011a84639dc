import COpenSSL

/// HMAC (RFC 2104) through OpenSSL: SHA-1 for HOTP (RFC 4226 fixes it), SHA-256 for everything Tokenet signs itself
/// (access tokens).
public enum HMAC {
    public enum Digest: String, Sendable {
        case sha1
        case sha256

        var size: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            }
        }

        var evp: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            }
        }
    }

    /// The authentication code of `message` under `key`.
    public static func code(_ digest: Digest, key: [UInt8], message: [UInt8]) throws(CardError) -> [UInt8] {
        guard key.count <= Int(Int32.max), message.count <= Int(Int32.max) else {
            throw CardError(.crypto, "HMAC input is too large")
        }
        OpenSSLErrorQueue.clear()
        var output = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        // A zero-length key is legal HMAC; OpenSSL wants a non-null pointer for it.
        let keyBytes = key.isEmpty ? [0] : key
        let result = keyBytes.withUnsafeBytes { keyBuffer in
            message.withUnsafeBytes { messageBuffer in
                COpenSSL.HMAC(
                    digest.evp, keyBuffer.baseAddress, Int32(key.count),
                    messageBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count, &output, &length)
            }
        }
        guard result != nil, Int(length) == digest.size else {
            throw CardError.openSSL(.crypto, "HMAC-\(digest.rawValue.uppercased()) failed")
        }
        return Array(output.prefix(Int(length)))
    }

    /// Compares two codes in time that depends only on their length, so a forger learns nothing from timing.
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.isEmpty { return true }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, lhs.count) == 0 }
        }
    }
}

/// PBKDF2-HMAC-SHA-256 (RFC 8018): stretches a short secret (a PIN) into a key, so that an attacker holding the
/// stored ciphertext pays `iterations` HMACs for every PIN guessed.
public enum PBKDF2 {
    public static func sha256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int) throws(CardError)
        -> [UInt8]
    {
        guard iterations > 0, iterations <= Int(Int32.max), length > 0, length <= 1024 else {
            throw CardError(.crypto, "PBKDF2 needs a positive iteration count and a key of 1 to 1024 bytes")
        }
        OpenSSLErrorQueue.clear()
        var key = [UInt8](repeating: 0, count: length)
        let status = password.withUnsafeBytes { passwordBuffer in
            salt.withUnsafeBytes { saltBuffer in
                PKCS5_PBKDF2_HMAC(
                    passwordBuffer.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(password.count),
                    saltBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(salt.count),
                    Int32(iterations), EVP_sha256(), Int32(length), &key)
            }
        }
        guard status == 1 else { throw CardError.openSSL(.crypto, "PBKDF2-HMAC-SHA-256 failed") }
        return key
    }
}
