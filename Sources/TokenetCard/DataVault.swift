/// Encryption at rest for card numbers and other secrets stored in SQLite: AES-256-GCM under one 32-byte key.
///
/// A record is `0x01 (version) || nonce (12 bytes) || ciphertext || tag (16 bytes)`. Each record gets a fresh random
/// nonce. Associated data (for example the row's record id) is authenticated but not stored, so a ciphertext copied
/// into another row fails to open there. The version byte lets a later format or key coexist with old records.
public struct DataVault: Sendable {
    public static let keySize = AESGCM.keySize
    public static let version: UInt8 = 1
    /// Version, nonce and tag: the bytes a record adds to its plaintext.
    public static let overhead = 1 + AESGCM.nonceSize + AESGCM.tagSize

    private let key: [UInt8]

    /// A vault using `key`, which must be exactly 32 bytes.
    public init(key: [UInt8]) throws(CardError) {
        guard key.count == Self.keySize else {
            throw CardError(.invalidKey, "a DataVault key is \(Self.keySize) bytes, not \(key.count)")
        }
        self.key = key
    }

    /// A vault whose key is the 32 raw bytes in `path`. When the file does not exist a random key is created there
    /// with 0600 permissions. An existing file must be exactly 32 bytes and readable by its owner only.
    /// (`openssl rand -out FILE 32 && chmod 600 FILE` makes a valid key file.)
    public init(keyFile path: String) throws(CardError) {
        let fresh = try SecureRandom.bytes(Self.keySize)
        if try SecretFile.createExclusive(fresh, at: path) {
            // Refused at the first start too, not only at the next: others could replace a key just made there.
            if let problem = SecretFile.exposure(of: path, what: "the vault key file") {
                throw CardError(.invalidKey, problem)
            }
            try self.init(key: fresh)
            return
        }
        let (bytes, _) = try SecretFile.read(path)
        if let problem = SecretFile.exposure(of: path, what: "the vault key file") {
            throw CardError(.invalidKey, problem)
        }
        guard bytes.count == Self.keySize else {
            throw CardError(
                .invalidKey,
                "the vault key file \(path) holds \(bytes.count) bytes; it must hold exactly \(Self.keySize) raw bytes"
            )
        }
        try self.init(key: bytes)
    }

    /// A keyed digest of `message` for `purpose` (HMAC-SHA-256 under a key derived from the vault's for that
    /// purpose alone, never the encryption key itself): what a node stores to recognise a short secret later, such
    /// as a one-time code, which an unkeyed hash of its few possible values would give away to whoever reads the
    /// database.
    public func digest(_ message: [UInt8], purpose: String) throws(CardError) -> [UInt8] {
        let derived = try HMAC.code(.sha256, key: key, message: Array("tokenet-vault-digest:\(purpose)".utf8))
        return try HMAC.code(.sha256, key: derived, message: message)
    }

    /// Encrypts `plaintext` into a new record.
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws(CardError) -> [UInt8] {
        let nonce = try SecureRandom.bytes(AESGCM.nonceSize)
        let (ciphertext, tag) = try AESGCM.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
        return [Self.version] + nonce + ciphertext + tag
    }

    /// Decrypts a record; throws `.malformedRecord` for a truncated or unknown-version record and
    /// `.authenticationFailed` when the record, the key or the associated data differ from sealing time.
    public func open(_ record: [UInt8], associatedData: [UInt8] = []) throws(CardError) -> [UInt8] {
        guard record.count >= Self.overhead else {
            throw CardError(
                .malformedRecord,
                "the vault record is \(record.count) bytes; a record has at least \(Self.overhead)"
            )
        }
        guard record[0] == Self.version else {
            throw CardError(
                .malformedRecord,
                "the vault record has format version \(record[0]); this build reads version \(Self.version)"
            )
        }
        let nonce = Array(record[1..<(1 + AESGCM.nonceSize)])
        let ciphertext = Array(record[(1 + AESGCM.nonceSize)..<(record.count - AESGCM.tagSize)])
        let tag = Array(record.suffix(AESGCM.tagSize))
        return try AESGCM.open(
            ciphertext,
            tag: tag,
            key: key,
            nonce: nonce,
            associatedData: associatedData,
            failure: "the vault record failed authentication: it was altered, belongs to another record id, "
                + "or was sealed with a different vault key"
        )
    }

    /// Seals a card number, bound to `recordID` (for example the funding card's row id).
    public func seal(_ pan: PAN, recordID: String) throws(CardError) -> [UInt8] {
        try seal(Array(pan.digits.utf8), associatedData: Array(recordID.utf8))
    }

    /// Opens a record made by `seal(_:recordID:)`.
    public func openPAN(_ record: [UInt8], recordID: String) throws(CardError) -> PAN {
        let bytes = try open(record, associatedData: Array(recordID.utf8))
        do {
            return try PAN(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw CardError(.malformedRecord, "the vault record for \(recordID) does not hold a valid card number")
        }
    }
}
