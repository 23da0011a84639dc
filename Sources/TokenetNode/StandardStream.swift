import Foundation
import Synchronization

/// Unbuffered, never-trapping writes to stdout and stderr.
///
/// Lines go out with `write(2)` straight away, so a parent reading a pipe sees `READY` at once, and errors such as
/// EPIPE (the reader went away) are ignored rather than crashing the process: losing a log line is better than
/// losing the node.
public enum StandardStream {
    case output
    case error

    private var descriptor: Int32 {
        switch self {
        case .output: return 1
        case .error: return 2
        }
    }

    /// The `errno` of the first write to stdout that failed for another reason than the reader having gone away
    /// (EPIPE: `tokenet tsp tokens | head -1` is not an error): a full disk or a closed descriptor. A node keeps
    /// running regardless; the `tokenet` CLI asks, so that output lost on the way to a file is not reported as
    /// success.
    public static var outputWriteError: Int32? {
        let code = outputFailure.load(ordering: .relaxed)
        return code == 0 ? nil : code
    }

    private static let outputFailure = Atomic<Int32>(0)

    /// Whether a write to stdout found its reader gone (EPIPE: `tokenet decode big.bin | head -1`). Not an error,
    /// but a command producing output in a loop stops there: nobody reads what it would still write.
    public static var outputReaderLeft: Bool { readerLeft.load(ordering: .relaxed) }

    private static let readerLeft = Atomic<Bool>(false)

    /// Whether the process was started with standard input closed (`<&-`), which `occupyClosedDescriptors` then
    /// filled with /dev/null: a command that reads it says so, where an empty read said the input was empty.
    public static var inputWasClosed: Bool { inputClosed.load(ordering: .relaxed) }

    private static let inputClosed = Atomic<Bool>(false)

    /// Puts /dev/null, opened read-only, on whichever of descriptors 0, 1 and 2 the process was started without
    /// (`tokenet call … >&-`). Otherwise the first socket or file the process opens takes the number, and the lines
    /// meant for stdout or stderr would go into a peer's TLS stream or a database. Read-only, so a write to it fails
    /// (EBADF) and `outputWriteError` reports the lost output, as for any stdout that cannot be written. Call it
    /// before anything opens a descriptor.
    public static func occupyClosedDescriptors() {
        for descriptor in Int32(0)...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            if descriptor == 0 { inputClosed.store(true, ordering: .relaxed) }
            let null = open("/dev/null", O_RDONLY)
            guard null >= 0 else { continue }
            if null != descriptor {
                _ = dup2(null, descriptor)
                close(null)
            }
        }
    }

    /// Writes `line` plus a newline.
    public func write(line: String) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    if self == .output, code == EPIPE {
                        Self.readerLeft.store(true, ordering: .relaxed)
                    } else if self == .output {
                        _ = Self.outputFailure.compareExchange(expected: 0, desired: code, ordering: .relaxed)
                    }
                    return
                }
                offset += written
            }
        }
    }
}
