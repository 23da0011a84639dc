import Foundation
import Synchronization

/// Where rendered log lines go.
public protocol LogSink: Sendable {
    func write(line: String)
}

/// Writes each line to standard error with one `write(2)` call, under a lock, so lines from different threads
/// never interleave.
public final class StandardErrorSink: LogSink {
    private let lock = Mutex(())

    public init() {}

    public func write(line: String) {
        let bytes = Array((line + "\n").utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }
}

/// Keeps lines in memory; for tests and for showing a node's recent log.
public final class MemoryLogSink: LogSink {
    private let storage = Mutex<[String]>([])

    public init() {}

    public func write(line: String) {
        storage.withLock { $0.append(line) }
    }

    public var lines: [String] { storage.withLock { $0 } }
}
