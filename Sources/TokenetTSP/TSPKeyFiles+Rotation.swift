import Foundation
import TokenetCard

/// An operator's rotation of the TSP's card-data key, and the forgetting of a retired one (`TspControl`), written to
/// `<data dir>/keys` before the keyring changes, so that what the TSP publishes is what its next start loads.
extension TSPKeyFiles {
    /// Makes a new current key and retires the current one, on disk first: the current key is saved as a retired
    /// key, then the new key replaces `card-key-current.pem` (a rename, so the file is whole at every moment). A
    /// crash between the two leaves the old key both current and retired, which the next start reads as current
    /// (`TSPKeyring` drops a retired copy of its current key); a rotation never loses a key that decrypts.
    static func rotate(
        _ keyring: TSPKeyring, dataDirectory: String, nowMs: UInt64
    ) throws -> (current: RSAPrivateKey, retired: RSAPrivateKey) {
        let directory = directory(in: dataDirectory)
        let previous = keyring.current
        let next = try RSAPrivateKey.generate()
        // After the last retired key's time, so the names keep the order of the rotations when two fall in one
        // millisecond or the clock went back.
        let latest = try retiredFileNames(in: directory).compactMap(retiredTime).max()
        let atMs = latest.map { max(nowMs, $0 + 1) } ?? nowMs
        let retiredPath = directory + "/" + retiredFileName(kid: previous.kid, atMs: atMs)
        try previous.write(toFile: retiredPath)
        do {
            try next.write(toFile: directory + "/card-key-current.pem")
        } catch {
            // The copy would be harmless (the next start reads it as the current key), but the keys on disk are
            // then not as they were, which the failure says they are.
            try? SecretFile.remove(retiredPath)
            throw error
        }
        keyring.rotate(to: next)
        return (next, previous)
    }

    /// A retired key's file name: the time it was retired first, so that the names sort oldest first, as the
    /// keyring keeps its retired keys, then the start of its kid, to tell keys retired in one millisecond apart.
    static func retiredFileName(kid: String, atMs: UInt64) -> String {
        let time = String(atMs)
        return "card-key-retired-" + String(repeating: "0", count: max(0, 13 - time.count)) + time + "-"
            + kid.prefix(16) + ".pem"
    }

    /// The time in a retired key's file name; nil for a name not made by `retiredFileName` (a key put there by
    /// hand, which sorts by its name as it is).
    static func retiredTime(_ name: String) -> UInt64? {
        let parts = name.dropFirst("card-key-retired-".count).split(separator: "-", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 13 else { return nil }
        return UInt64(parts[0])
    }

    /// What forgetting a key did.
    enum Forgetting: Equatable {
        /// The key was retired; its files are deleted and it decrypts no more.
        case forgotten
        /// The key is the current one, which senders encrypt to.
        case current
        /// No key the TSP holds has this kid.
        case unknown
        /// The key is retired, but no file in the keys directory holds it any more (one was replaced or damaged
        /// since the start): nothing was deleted, and the key stays, so that the answer is not "forgotten" for a
        /// key whose file is still there.
        case noFile
    }

    /// Forgets the retired key `kid`: its files are deleted (every copy, should a crash have left two, and a file
    /// named for it that no longer reads as a key, which would stop the next start), then the keyring drops it.
    /// The current key is never deleted.
    static func forget(kid: String, in keyring: TSPKeyring, dataDirectory: String) throws -> Forgetting {
        if keyring.currentKid == kid { return .current }
        guard keyring.key(for: kid) != nil else { return .unknown }
        let directory = directory(in: dataDirectory)
        var deleted = 0
        for name in try retiredFileNames(in: directory) {
            let path = directory + "/" + name
            switch (try? RSAPrivateKey(contentsOfFile: path))?.kid {
            case kid?: break
            case nil where retiredTime(name) != nil && name.hasSuffix("-" + kid.prefix(16) + ".pem"): break
            default: continue
            }
            try SecretFile.remove(path)
            deleted += 1
        }
        guard deleted > 0 else { return .noFile }
        keyring.forget(kid: kid)
        return .forgotten
    }

    /// The retired keys' file names in `directory`, oldest first.
    static func retiredFileNames(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("card-key-retired-") && $0.hasSuffix(".pem") }
            .sorted()
    }

    /// Removes what a write interrupted by a crash left of a retired key (`card-key-retired-….pem.tmp.PID`, a copy
    /// of a private key): no later write has its name, so nothing else would ever remove it.
    static func removeInterruptedWrites(in directory: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix("card-key-retired-") && name.contains(".pem.tmp.") {
            try? SecretFile.remove(directory + "/" + name)
        }
    }
}
