import Foundation

/// What a node announces once it accepts connections, in its ready file and its `READY` line.
public struct ReadyInfo: Codable, Sendable, Equatable {
    public var node: String
    public var pid: Int32
    public var listen: String

    public init(node: String, pid: Int32, listen: String) {
        self.node = node
        self.pid = pid
        self.listen = listen
    }

    /// The line printed to stdout: `READY tsp-node pid=1234 listen=127.0.0.1:40123`.
    public var line: String { "READY \(node) pid=\(pid) listen=\(listen)" }

    /// Parses a `READY` line; nil when the line is anything else.
    public init?(line: String) {
        let words = line.split(separator: " ")
        guard words.count == 4, words[0] == "READY", words[2].hasPrefix("pid="), words[3].hasPrefix("listen="),
            let pid = Int32(words[2].dropFirst(4))
        else { return nil }
        self.init(node: String(words[1]), pid: pid, listen: String(words[3].dropFirst(7)))
    }
}

/// Writes and reads ready files.
///
/// The file is written to a temporary name in the same directory and renamed into place, so a reader polling for
/// it sees either nothing or the complete JSON object, never a partial write.
public enum ReadyFile {
    /// The file a node put in place, by its device and inode: at stop the node removes the file at its path only if
    /// it is still this one.
    public struct Written: Sendable, Equatable {
        public var path: String
        var device: UInt64
        var inode: UInt64

        /// Removes the file unless something else has taken its path since.
        public func remove() {
            var status = stat()
            guard lstat(path, &status) == 0, UInt64(status.st_dev) == device, UInt64(status.st_ino) == inode else {
                return
            }
            unlink(path)
        }
    }

    @discardableResult
    public static func write(_ info: ReadyInfo, to path: String) throws(NodeError) -> Written {
        try prepare(info, to: path).commit()
    }

    /// The ready file written beside its path, to be moved into place by `commit`: the writing, which a full disk
    /// fails, is done before the node prints its READY line, and the move, which needs no room, after it.
    public struct Prepared: Sendable {
        let temporary: String
        let path: String

        /// Moves the file into place.
        public func commit() throws(NodeError) -> Written {
            var status = stat()
            guard stat(temporary, &status) == 0, rename(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                throw NodeError(
                    .io, "cannot move ready file into place at \(path)",
                    cause: SystemCallError(call: "rename", errno: code))
            }
            return Written(path: path, device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        }
    }

    /// Writes the ready file beside `path` (`Prepared.commit` moves it into place). A failed write leaves no file
    /// behind.
    public static func prepare(_ info: ReadyInfo, to path: String) throws(NodeError) -> Prepared {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let temporary = "\(path).tmp.\(getpid())"
        do {
            let data = try encoder.encode(info) + Data("\n".utf8)
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            unlink(temporary)
            throw NodeError(.io, "cannot write ready file \(temporary)", cause: DescribedError(error))
        }
        return Prepared(temporary: temporary, path: path)
    }

    /// Checks, before the node binds, that `write` will be able to put the file at `path`: a node that prints its
    /// `READY` line and then exits because the ready file cannot be written tells whoever reads stdout that it is up
    /// when it is not. A path that is a directory or in a directory that cannot take a file is a bad option.
    ///
    /// The node replaces what is at `path` and removes it when it stops: anything but a regular file (a device such
    /// as /dev/null, a FIFO, a symlink) is refused, as is a file that holds something other than a ready file (an
    /// empty one, as mktemp makes, is taken). Before, `--ready-file /dev/null` replaced the device with a file.
    public static func checkWritable(_ path: String) throws(NodeError) {
        var status = stat()
        if lstat(path, &status) == 0 {
            let kind: String? =
                switch status.st_mode & S_IFMT {
                case S_IFREG: nil
                case S_IFDIR: "a directory"
                case S_IFLNK: "a symbolic link"
                case S_IFCHR: "a character device"
                case S_IFBLK: "a block device"
                case S_IFIFO: "a FIFO"
                case S_IFSOCK: "a socket"
                default: "not a regular file"
                }
            if let kind {
                throw NodeError(
                    .config,
                    "--ready-file: \(path) is \(kind); the node replaces the file there and removes it when it "
                        + "stops, so name a regular file or a path that does not exist yet")
            }
            if status.st_size > 0 {
                guard let info = try? read(from: path) else {
                    throw NodeError(
                        .config,
                        "--ready-file: \(path) holds something other than a ready file, which the node would replace "
                            + "and remove when it stops; name another path, or delete the file first")
                }
                // Another node's, while it runs: taken, it named this node, and this node's stop removed it from
                // under the other. One left by a node that has gone (killed) is taken.
                if info.pid != getpid(), isRunning(info) {
                    throw NodeError(
                        .config,
                        "--ready-file: \(path) is the ready file of \(info.node) pid \(info.pid), which is running; "
                            + "give each node a ready file of its own")
                }
            }
        }
        let temporary = "\(path).tmp.\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            // Named as the operator gave it, with what to change: the file beside it that the check makes (and a
            // write replaces the ready file with) is the node's own detail.
            let failure = errno
            let directory =
                (path as NSString).deletingLastPathComponent.isEmpty
                ? "." : (path as NSString).deletingLastPathComponent
            let reason: String
            switch failure {
            case ENOENT: reason = "its directory \(directory) does not exist; create it, or give another path"
            case EACCES, EPERM: reason = "this user may not create files in \(directory); give another path"
            case EROFS: reason = "\(directory) is on a read-only file system; give another path"
            default: reason = "a file cannot be created beside it (\(temporary)); give another path"
            }
            throw NodeError(
                .config, "--ready-file: cannot write \(path): \(reason)",
                cause: SystemCallError(call: "open", errno: failure))
        }
        close(descriptor)
        unlink(temporary)
    }

    /// Whether the node a ready file names still runs: its pid is alive and is that node's executable, by the name
    /// it was started as or the file it runs (a node started through a link or as a copy under another name), or
    /// this very executable (a pid taken by another program since is neither).
    static func isRunning(_ info: ReadyInfo) -> Bool {
        guard info.pid > 0, kill(info.pid, 0) == 0 || errno == EPERM else { return false }
        let command = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(info.pid)/cmdline"))) ?? Data()
        let started = command.split(separator: 0).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let file = executable(of: "\(info.pid)")
        return [started, file ?? ""].contains { $0 == info.node || $0.hasSuffix("/" + info.node) }
            || (file != nil && file == executable(of: "self"))
    }

    /// The file `/proc/PROCESS/exe` names, or nil when it cannot be read.
    private static func executable(of process: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(process)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Refuses a ready file that is one of the node's own files (`--key`, say), by device and inode.
    public static func checkNotOneOf(_ path: String, _ files: [(flag: String, path: String?)]) throws(NodeError) {
        var ready = stat()
        guard stat(path, &ready) == 0 else { return }
        for case (let flag, let file?) in files {
            var status = stat()
            if stat(file, &status) == 0, status.st_dev == ready.st_dev, status.st_ino == ready.st_ino {
                throw NodeError(.config, "--ready-file: \(path) is the node's \(flag) file; name another path")
            }
        }
    }

    public static func read(from path: String) throws(NodeError) -> ReadyInfo {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try JSONDecoder().decode(ReadyInfo.self, from: data)
        } catch {
            throw NodeError(.io, "cannot read ready file \(path)", cause: DescribedError(error))
        }
    }
}
