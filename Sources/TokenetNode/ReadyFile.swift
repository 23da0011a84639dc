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
    public static func write(_ info: ReadyInfo, to path: String) throws(NodeError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let temporary = "\(path).tmp.\(getpid())"
        do {
            let data = try encoder.encode(info) + Data("\n".utf8)
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            throw NodeError(.io, "cannot write ready file \(temporary)", cause: DescribedError(error))
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw NodeError(
                .io, "cannot move ready file into place at \(path)", cause: SystemCallError(call: "rename", errno: code)
            )
        }
    }

    /// Checks, before the node binds, that `write` will be able to put the file at `path`: a node that prints its
    /// `READY` line and then exits because the ready file cannot be written tells whoever reads stdout that it is up
    /// when it is not. A path that is a directory or in a directory that cannot take a file is a bad option.
    public static func checkWritable(_ path: String) throws(NodeError) {
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw NodeError(.config, "--ready-file: \(path) is a directory")
        }
        let temporary = "\(path).tmp.\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw NodeError(
                .config, "--ready-file: cannot write \(temporary)", cause: SystemCallError(call: "open", errno: errno))
        }
        close(descriptor)
        unlink(temporary)
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
