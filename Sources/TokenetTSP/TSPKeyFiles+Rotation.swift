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
    ) throws(CardError) -> (current: RSAPrivateKey, retired: RSAPrivateKey) {
        let directory = directory(in: dataDirectory)
        let previous = keyring.current
        let next = try RSAPrivateKey.generate()
        // After the last retired key's time, so the names keep the order of the rotations when two fall in one
        // millisecond or the clock went back.
        let latest = try retiredFileNames(in: directory).compactMap(retiredTime).max()
        let atMs = latest.map { max(nowMs, $0 + 1) } ?? nowMs
        try previous.write(toFile: directory + "/" + retiredFileName(kid: previous.kid, atMs: atMs))
        try next.write(toFile: directory + "/card-key-current.pem")
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
    }

    /// Forgets the retired key `kid`: its files are deleted (every copy, should a crash have left two), then the
    /// keyring drops it. The current key is never deleted.
    static func forget(kid: String, in keyring: TSPKeyring, dataDirectory: String) throws(CardError) -> Forgetting {
        if keyring.currentKid == kid { return .current }
        guard keyring.key(for: kid) != nil else { return .unknown }
        let directory = directory(in: dataDirectory)
        for name in try retiredFileNames(in: directory) {
            let path = directory + "/" + name
            // A file that does not read as a key is left alone: it is not the one asked for, and it was loaded at
            // start, so it is a key this process just cannot read now (its mode changed): the start says so.
            guard (try? RSAPrivateKey(contentsOfFile: path))?.kid == kid else { continue }
            try SecretFile.remove(path)
        }
        keyring.forget(kid: kid)
        return .forgotten
    }

    /// The retired keys' file names in `directory`, oldest first.
    static func retiredFileNames(in directory: String) throws(CardError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { $0.hasPrefix("card-key-retired-") && $0.hasSuffix(".pem") }
                .sorted()
        } catch {
            throw CardError(.io, "cannot list the key files in \(directory): \(error.localizedDescription)")
        }
    }
}
