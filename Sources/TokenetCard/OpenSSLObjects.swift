import COpenSSL
import CTokenetShims

// The lowest layer over libcrypto: each class owns exactly one OpenSSL object and frees it in `deinit`, so no code
// path (including thrown errors) can leak or double-free it. Nothing here is public.

/// Owns an `EVP_PKEY`. OpenSSL 3 key objects are immutable once built and safe to use from several threads at
/// once, which is why the owning key types can be `Sendable`.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }
}

/// Owns an `EVP_PKEY_CTX`, the per-operation state of keygen, encrypt and decrypt.
final class PKeyContext {
    let pointer: OpaquePointer

    init(key: EVPKey) throws(CardError) {
        guard let pointer = EVP_PKEY_CTX_new(key.pointer, nil) else {
            throw CardError.openSSL(.crypto, "could not create a key operation context")
        }
        self.pointer = pointer
    }

    init(rsaKeygen: ()) throws(CardError) {
        guard let pointer = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else {
            throw CardError.openSSL(.crypto, "could not create an RSA key generation context")
        }
        self.pointer = pointer
    }

    deinit { EVP_PKEY_CTX_free(pointer) }
}

/// Owns an `EVP_CIPHER_CTX`.
final class CipherContext {
    let pointer: OpaquePointer

    init() throws(CardError) {
        guard let pointer = EVP_CIPHER_CTX_new() else {
            throw CardError.openSSL(.crypto, "could not create a cipher context")
        }
        self.pointer = pointer
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// Owns a memory `BIO`, used to move PEM text in and out of OpenSSL.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// An empty, writable BIO.
    init() throws(CardError) {
        guard let pointer = BIO_new(BIO_s_mem()) else {
            throw CardError.openSSL(.crypto, "could not create a memory BIO")
        }
        self.pointer = pointer
    }

    /// A BIO reading a copy of `bytes`.
    init(reading bytes: [UInt8]) throws(CardError) {
        guard let pointer = BIO_new(BIO_s_mem()) else {
            throw CardError.openSSL(.crypto, "could not create a memory BIO")
        }
        self.pointer = pointer
        let written = bytes.withUnsafeBytes { BIO_write(pointer, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) || bytes.isEmpty else {
            throw CardError.openSSL(.crypto, "could not fill a memory BIO")
        }
    }

    /// Everything written to the BIO so far.
    var contents: [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        let length = ctk_bio_get_mem_data(pointer, &data)
        guard let data, length > 0 else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    deinit { BIO_free(pointer) }
}

/// Random bytes from OpenSSL's CSPRNG. Public so parties can make secrets (HOTP keys, salts, device PINs) from it.
public enum SecureRandom {
    public static func bytes(_ count: Int) throws(CardError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw CardError.openSSL(.crypto, "the random number generator failed")
        }
        return bytes
    }
}

/// SHA-256 of a byte string. Public so parties can store digests of short-lived secrets (one-time codes) instead
/// of the secrets themselves.
public enum SHA256 {
    public static func hash(_ bytes: [UInt8]) throws(CardError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let status = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
        }
        guard status == 1, length == 32 else { throw CardError.openSSL(.crypto, "SHA-256 failed") }
        return digest
    }
}
