import COpenSSL

/// AES-256-GCM with a 12-byte nonce and a 16-byte tag, shared by JWE `A256GCM` and `DataVault`.
enum AESGCM {
    static let keySize = 32
    static let nonceSize = 12
    static let tagSize = 16
    /// OpenSSL takes lengths as `int`; larger inputs are refused rather than truncated.
    static let maximumLength = Int(Int32.max) - 32

    /// Encrypts `plaintext`; returns the ciphertext (same length) and the tag.
    static func seal(
        _ plaintext: [UInt8],
        key: [UInt8],
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CardError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        precondition(key.count == keySize && nonce.count == nonceSize, "AES-GCM key and nonce sizes are checked")
        guard plaintext.count <= maximumLength, associatedData.count <= maximumLength else {
            throw CardError(.crypto, "AES-256-GCM input of \(plaintext.count) bytes is too large; the limit is 2 GiB")
        }
        OpenSSLErrorQueue.clear()
        let context = try CipherContext()
        let ctx = context.pointer
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CardError.openSSL(.crypto, "AES-256-GCM encryption could not start")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1 else {
                throw CardError.openSSL(.crypto, "AES-256-GCM could not absorb the associated data")
            }
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var total = 0
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(ctx, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1 else {
                throw CardError.openSSL(.crypto, "AES-256-GCM encryption failed")
            }
            total = Int(length)
        }
        let finished = ciphertext.withUnsafeMutableBufferPointer {
            EVP_EncryptFinal_ex(ctx, $0.baseAddress! + total, &length)
        }
        guard finished == 1 else { throw CardError.openSSL(.crypto, "AES-256-GCM encryption could not finish") }
        total += Int(length)
        var tag = [UInt8](repeating: 0, count: tagSize)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagSize), &tag) == 1 else {
            throw CardError.openSSL(.crypto, "AES-256-GCM did not produce a tag")
        }
        return (Array(ciphertext.prefix(total)), tag)
    }

    /// Decrypts and authenticates; throws `.authenticationFailed` when anything covered by the tag was altered.
    static func open(
        _ ciphertext: [UInt8],
        tag: [UInt8],
        key: [UInt8],
        nonce: [UInt8],
        associatedData: [UInt8],
        failure: String
    ) throws(CardError) -> [UInt8] {
        precondition(key.count == keySize && nonce.count == nonceSize && tag.count == tagSize, "sizes are checked")
        guard ciphertext.count <= maximumLength, associatedData.count <= maximumLength else {
            throw CardError(.crypto, "AES-256-GCM input of \(ciphertext.count) bytes is too large; the limit is 2 GiB")
        }
        OpenSSLErrorQueue.clear()
        let context = try CipherContext()
        let ctx = context.pointer
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CardError.openSSL(.crypto, "AES-256-GCM decryption could not start")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1 else {
                throw CardError.openSSL(.crypto, "AES-256-GCM could not absorb the associated data")
            }
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var total = 0
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(ctx, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1 else {
                throw CardError.openSSL(.crypto, "AES-256-GCM decryption failed")
            }
            total = Int(length)
        }
        var expectedTag = tag
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagSize), &expectedTag) == 1 else {
            throw CardError.openSSL(.crypto, "AES-256-GCM did not accept the tag")
        }
        let finished = plaintext.withUnsafeMutableBufferPointer {
            EVP_DecryptFinal_ex(ctx, $0.baseAddress! + total, &length)
        }
        guard finished == 1 else {
            // A failed tag check leaves nothing useful on the error queue; the message says what it means.
            OpenSSLErrorQueue.clear()
            throw CardError(.authenticationFailed, failure)
        }
        total += Int(length)
        return Array(plaintext.prefix(total))
    }
}
