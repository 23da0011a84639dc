import Foundation
import TokenetNode

/// Reads all of standard input, or of a file given by name, with read(2), reporting failures instead of trapping.
///
/// `FileHandle.readDataToEndOfFile()` traps on a read error, which a directory (`< /tmp`) or a closed descriptor
/// (`<&-`) causes; the CLI must say what went wrong and exit with a usage error instead.
enum StandardInput {
    /// The bytes up to end of file; throws a usage error naming the system's reason when reading fails, and
    /// `overLimit` as soon as more than `limit` bytes have arrived.
    ///
    /// The rest of an input over the limit is never read: a huge file or an endless pipe (`< /dev/zero`) is refused
    /// after `limit` bytes of memory, where reading it whole cost several times its size before anything could say
    /// that it was too large.
    static func readAll(command: String, limit: Int, overLimit: @autoclosure () -> CLIError) throws(CLIError)
        -> [UInt8]
    {
        // Without a deadline the read never gives up, so there is always a result.
        try readAll(descriptor: 0, named: "standard input", command: command, limit: limit, overLimit: overLimit())!
    }

    /// `readAll(command:limit:overLimit:)` that gives up at `deadline`, returning nil: standard input that is slow
    /// to end (a pipe whose writer holds it open) must not outlast the command's `--deadline`.
    static func readAll(
        command: String, limit: Int, until deadline: ContinuousClock.Instant?, overLimit: @autoclosure () -> CLIError
    ) throws(CLIError) -> [UInt8]? {
        try readAll(
            descriptor: 0, named: "standard input", command: command, limit: limit, until: deadline,
            overLimit: overLimit())
    }

    /// All of `file`, read as a stream: a FIFO, `/dev/stdin` or a shell's `<(…)` works as well as a regular file.
    /// (`Data(contentsOf:)` refused those with "Permission denied", though the person could read them.)
    static func readAll(file: String, command: String, limit: Int, overLimit: @autoclosure () -> CLIError)
        throws(CLIError) -> [UInt8]
    {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CLIError(.usage, "\(command): cannot read \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        return try readAll(descriptor: descriptor, named: file, command: command, limit: limit, overLimit: overLimit())!
    }

    private static func readAll(
        descriptor: Int32, named name: String, command: String, limit: Int,
        until deadline: ContinuousClock.Instant? = nil,
        overLimit: @autoclosure () -> CLIError
    ) throws(CLIError) -> [UInt8]? {
        if descriptor == 0, StandardStream.inputWasClosed {
            throw CLIError(
                .usage,
                "\(command): standard input is closed (the command was started with <&-); pipe or redirect the input "
                    + "into it")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let deadline {
                let left = deadline - .now
                guard left > .zero else { return nil }
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                // At most a second at a time, at least a millisecond: poll takes whole milliseconds.
                let milliseconds = Int32(min(1000, max(1, (left / .milliseconds(1)).rounded(.up))))
                let ready = poll(&entry, 1, milliseconds)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            }
            let count = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                throw CLIError(.usage, "\(command): cannot read \(name): \(String(cString: strerror(error)))")
            }
            guard bytes.count + count <= limit else { throw overLimit() }
            bytes += chunk[..<count]
        }
    }
}
