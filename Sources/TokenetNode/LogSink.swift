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
        lock.withLock { _ in StandardStream.error.write(line: line) }
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
