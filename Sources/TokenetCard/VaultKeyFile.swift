import Foundation

/// A DataVault loaded from its key file, and the check that the key is the one a database's sealed data needs.
///
/// Without the check, a node whose key file was deleted (or replaced) created a fresh key and started as if nothing
/// was wrong, and then failed every call that opened sealed data ("try again later") long after the cause. A
/// database keeps a *check value* instead: a known plaintext sealed with its vault key when the key is first used
/// with it. At start the check value must open with the key loaded; one that does not means sealed data can never be
/// read again with this key, and the node refuses to start with a message naming the key file.
public struct VaultKeyFile: Sendable {
    /// What the check value holds; only the key's ability to open it matters, not its secrecy.
    static let checkPlaintext = Array("tokenet vault key check v1".utf8)
    static let checkAssociatedData = Array("vault-key-check".utf8)

    public let path: String
    public let vault: DataVault
    /// Whether the file did not exist and was created (with a new random key) by this load.
    public let created: Bool

    /// Loads the key in `path`, creating a random one there when the file does not exist (see `DataVault`).
    public init(path: String) throws(CardError) {
        let existed = FileManager.default.fileExists(atPath: path)
        self.path = path
        self.vault = try DataVault(keyFile: path)
        self.created = !existed
    }

    /// A record sealed in a database, with the associated data it was sealed with: evidence, for a database made
    /// before check values existed, of which key the database needs.
    public struct SealedSample: Sendable {
        public var record: [UInt8]
        public var associatedData: [UInt8]

        public init(record: [UInt8], associatedData: [UInt8]) {
            self.record = record
            self.associatedData = associatedData
        }
    }

    /// How many bytes a check value has: a DataVault record of `checkPlaintext`.
    static let checkSize = DataVault.overhead + checkPlaintext.count

    /// Checks this key against `database`'s stored check value, or — when it has none yet — against `sample`, one
    /// of its sealed records (nil when it holds none). Returns the check value to store when there was none; nil
    /// when the stored one matched. Throws `.vaultKeyMismatch` when the key cannot open what the database holds; a
    /// key file created by this load is then removed again, so the data directory is left as it was found and the
    /// original key can simply be put back.
    ///
    /// A check value the key cannot open is damage to the database rather than a wrong key when the key opens the
    /// database's sealed records, or, for a database without any, when it is not a check value at all (another
    /// size or format version): that throws `.corruptKeyCheck`, whose advice is a backup of the database, not
    /// starting afresh. A key file created by this load is always the wrong key.
    public func verify(
        storedCheck: [UInt8]?, sample: @autoclosure () throws -> SealedSample?, database: String
    ) throws -> [UInt8]? {
        func opens(_ sample: SealedSample) -> Bool {
            (try? vault.open(sample.record, associatedData: sample.associatedData)) != nil
        }
        let fits: Bool
        if let storedCheck {
            fits = (try? vault.open(storedCheck, associatedData: Self.checkAssociatedData)) == Self.checkPlaintext
            if !fits, !created {
                if let sample = try sample() {
                    if opens(sample) {
                        throw corruptCheck(
                            database: database,
                            detail: "the key opens the database's sealed data but not the check value")
                    }
                } else if storedCheck.count != Self.checkSize || storedCheck.first != DataVault.version {
                    throw corruptCheck(
                        database: database,
                        detail: "it holds \(storedCheck.count) bytes, not a \(Self.checkSize)-byte sealed check value")
                }
            }
        } else if let sample = try sample() {
            fits = opens(sample)
        } else {
            fits = true
        }
        guard fits else {
            if created { try? FileManager.default.removeItem(atPath: path) }
            throw mismatch(database: database)
        }
        return storedCheck == nil ? try vault.seal(Self.checkPlaintext, associatedData: Self.checkAssociatedData) : nil
    }

    private func corruptCheck(database: String, detail: String) -> CardError {
        CardError(
            .corruptKeyCheck,
            "the database \(database) has a damaged vault key check value (\(detail)), so whether \(path) is its "
                + "key cannot be checked; restore the database from a backup. If \(path) is the key its data was sealed "
                + "with, removing the check value (DELETE FROM vault_key_check) lets the node store a new one at its "
                + "next start")
    }

    private func mismatch(database: String) -> CardError {
        let what =
            created
            ? "the vault key file \(path) is missing, but the database \(database) holds data sealed with a vault key"
            : "the vault key file \(path) is not the key the database \(database) was sealed with"
        return CardError(
            .vaultKeyMismatch,
            "\(what); sealed data cannot be read without the original key: restore the original \(path), "
                + "or remove the data directory to start afresh")
    }
}
