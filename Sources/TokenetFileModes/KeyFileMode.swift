#if canImport(Glibc)
    import Glibc
#endif

/// The one rule every file holding a secret is held to (TLS private keys, the vault key, the TSP's card keys, the
/// issuer's key): only its owner may read or change it. Whoever else can read it has the secret (a private key lets
/// them pose as its owner and decrypt a capture); whoever can change it can put their own in its place. Execute bits
/// give nobody anything, and are let be. ssh and PostgreSQL refuse such keys the same way.
public enum KeyFileMode {
    /// What other users can do with a file of `mode`, when they can do anything: a group may read one only when
    /// `groupMayRead` (a TLS key root owns, as Debian's `ssl-cert` group reads `/etc/ssl/private`).
    public struct Exposure: Sendable, Equatable {
        /// The permission bits, for messages ("644").
        public let mode: UInt32
        /// Others can read it; otherwise they can only change it.
        public let readable: Bool

        /// "can be read by other users (mode 644)".
        public var phrase: String {
            "can be \(readable ? "read" : "changed") by other users (mode \(String(mode, radix: 8)))"
        }
    }

    /// How `mode` exposes the file, or nil when only its owner (and, with `groupMayRead`, its group, reading) can
    /// read or change it.
    public static func exposure(mode: UInt32, groupMayRead: Bool = false) -> Exposure? {
        let bits = mode & 0o777
        let allowed: UInt32 = groupMayRead ? 0o640 : 0o600
        let exposed = bits & ~allowed & 0o066
        guard exposed != 0 else { return nil }
        return Exposure(mode: bits, readable: exposed & 0o044 != 0)
    }

    /// Why a secret file at `path` owned by `owner` is refused whatever its mode, as a phrase to follow its name,
    /// or nil: another user owns it (not this process's user, nor root), who can read it or put their own key in its
    /// place by changing its mode; or a directory above it (above the path as given and above where a symbolic
    /// link leads, up to `/`) is another user's, or its group or everyone may write it with no sticky bit: whoever
    /// can change a directory on the way can rename it and put their own key in its place. sshd's StrictModes
    /// refuses such keys the same way.
    public static func placement(of path: String, owner: UInt32) -> String? {
        let me = UInt32(geteuid())
        if owner != me, owner != 0 {
            return "is owned by another user (uid \(owner)), who can read it or put their own key in its place "
                + "whatever its mode; copy it to a file this user owns (cp, then chmod 600) and give that"
        }
        guard let resolved = realpath(path, nil) else { return nil }
        let real = String(cString: resolved)
        free(resolved)
        // The directories above the path as given, where a symbolic link sits (whoever can change them can replace
        // the link), and those above where it leads.
        var given = path
        if !given.hasPrefix("/"), let cwd = getcwd(nil, 0) {
            given = String(cString: cwd) + "/" + given
            free(cwd)
        }
        var directories: [String] = []
        for start in [given, real] {
            var directory = Self.directory(of: start)
            while true {
                if !directories.contains(directory) { directories.append(directory) }
                guard directory != "/" else { break }
                directory = Self.directory(of: directory)
            }
        }
        for directory in directories {
            var info = stat()
            guard stat(directory, &info) == 0 else { continue }
            let bits = UInt32(info.st_mode) & 0o7777
            let directoryOwner = UInt32(info.st_uid)
            if directoryOwner != me, directoryOwner != 0 {
                return "is in a directory another user owns (\(directory), uid \(directoryOwner)), who can put their "
                    + "own key in its place; keep the key under directories that only this user or root own"
            }
            if bits & 0o022 != 0, bits & 0o1000 == 0 {
                return
                    "is in a directory other users can change (\(directory), mode \(String(bits & 0o777, radix: 8))), "
                    + "where they can put their own key in its place; run chmod go-w \(shellQuoted(directory))"
            }
        }
        return nil
    }

    /// The directory that holds `path` ("." for a bare file name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// The command that fixes an exposed file, its path quoted when the shell would split it.
    public static func fix(_ path: String) -> String { "chmod 600 \(shellQuoted(path))" }

    /// `path` as a shell takes it: quoted when it holds anything but letters, digits and `/._-+,:@%=`.
    public static func shellQuoted(_ path: String) -> String {
        let safe = Set("/._-+,:@%=".unicodeScalars)
        let plain = path.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || safe.contains($0)
        }
        guard !plain || path.isEmpty else { return path }
        // Each ' ends the quoting, is written escaped, and quoting starts again.
        return "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
