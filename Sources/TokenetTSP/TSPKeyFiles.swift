import Foundation
import TokenetCard
import TokenetNode

/// The TSP's keys on disk, in `<data dir>/keys`: the current card-data key `card-key-current.pem`, retired keys
/// `card-key-retired-*.pem` (still decrypting), the DataVault key `data-vault.key` and the access-token key `access-token.key`, every file
/// mode 0600.
enum TSPKeyFiles {
    static func directory(in dataDirectory: String) -> String { dataDirectory + "/keys" }

    /// The key files a used data directory should hold, with what a new one in its place breaks: checked before they
    /// are loaded (a missing one is made anew), so that a key lost from a TSP that holds data is said, where it was
    /// remade without a word.
    static let remadeKeys = [
        (
            "card-key-current.pem",
            "card data encrypted to the old key (by wallets and issuers that fetched it) can no longer be read"
        ),
        ("access-token.key", "access tokens issued before no longer verify: cardholders sign in again"),
    ]

    /// The key files of `remadeKeys` (and the vault key's, `withVault`) that `dataDirectory` lacks, which loading the
    /// keys makes.
    static func missingKeyPaths(dataDirectory: String, withVault: Bool = false) -> [String] {
        (remadeKeys.map(\.0) + (withVault ? ["data-vault.key"] : [])).map { directory(in: dataDirectory) + "/" + $0 }
            .filter { !FileManager.default.fileExists(atPath: $0) }
    }

    /// Warnings for the key files missing from `dataDirectory` beside a database an earlier start made (call before
    /// loading, once the database is known to be the TSP's).
    static func missingKeyWarnings(dataDirectory: String) -> [String] {
        let database = dataDirectory + "/tsp.sqlite"
        let size = (try? FileManager.default.attributesOfItem(atPath: database)[.size] as? NSNumber)?.uint64Value ?? 0
        guard size > 0 else { return [] }
        return remadeKeys.compactMap { name, loss in
            let path = directory(in: dataDirectory) + "/" + name
            guard !FileManager.default.fileExists(atPath: path) else { return nil }
            return "\(path) is missing, though \(database) shows this data directory was used before: a new key is "
                + "made in its place, and \(loss); stop the node and restore the key from a backup if there is one"
        }
    }

    static let damagedRetiredKeyAdvice =
        "restore this retired card-data key from a backup, or remove the file to drop the key (card data encrypted to "
        + "it is then refused)"

    /// Loads the keyring, making and saving a first key when there is none.
    static func loadKeyring(dataDirectory: String) throws -> TSPKeyring {
        let directory = try makeDirectory(dataDirectory)
        let currentPath = directory + "/card-key-current.pem"
        let current: RSAPrivateKey
        if FileManager.default.fileExists(atPath: currentPath) {
            current = try RSAPrivateKey(ownerOnlyFile: currentPath)
        } else {
            current = try RSAPrivateKey.generate()
            try current.write(toFile: currentPath)
            // Refused at the first start too, not only at the next: others could replace a key just made there.
            _ = try RSAPrivateKey(ownerOnlyFile: currentPath)
        }
        removeInterruptedWrites(in: directory)
        let retired = try retiredFileNames(in: directory).map { name throws(CardError) -> RSAPrivateKey in
            let path = directory + "/" + name
            // A mode or owner to fix is said as for every key (`ownerOnlyFile`); a directory in the key's place is
            // no mode to fix, and gets the advice for a damaged key below.
            if let problem = SecretFile.exposure(of: path, what: "the key file") {
                guard problem.hasSuffix("is a directory, not a file") else { throw CardError(.invalidKey, problem) }
                throw CardError(.io, problem + "; " + Self.damagedRetiredKeyAdvice)
            }
            do throws(CardError) {
                return try RSAPrivateKey(contentsOfFile: path)
            } catch {
                // One damaged retired key stopped the TSP with nothing said about what to do.
                throw CardError(
                    error.code,
                    "\(error.message); \(Self.damagedRetiredKeyAdvice)",
                    details: error.details, cause: error.cause)
            }
        }
        return TSPKeyring(current: current, retired: retired)
    }

    /// The vault sealing PANs and card data at rest; its key file is created on first start (the store then checks
    /// that it opens what the database holds).
    static func loadVault(dataDirectory: String) throws -> VaultKeyFile {
        try VaultKeyFile(path: try makeDirectory(dataDirectory) + "/data-vault.key")
    }

    /// The key signing access tokens (`access-token.key`, 32 random bytes, 0600), created on first start.
    static func loadAccessTokenKey(dataDirectory: String) throws -> [UInt8] {
        try SecretKeyFile.loadOrCreate(path: try makeDirectory(dataDirectory) + "/access-token.key")
    }

    /// Creates `<data dir>/keys` unless it exists. A file by that name is refused with its path and what to do,
    /// where Foundation's own error read `NSCocoaErrorDomain Code=516 "A file with the same name already exists."`.
    private static func makeDirectory(_ dataDirectory: String) throws -> String {
        let path = directory(in: dataDirectory)
        if DirectoryPath.blockingFile(on: path) == path {
            throw NodeError(
                .config,
                "\(path) is a file, but the TSP keeps its keys in a directory by that name; move the file away "
                    + "(if it is a backup of the keys, restore them into the directory)")
        }
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }
}
