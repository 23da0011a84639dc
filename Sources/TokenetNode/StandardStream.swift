import Foundation

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

    /// Writes `line` plus a newline.
    public func write(line: String) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
