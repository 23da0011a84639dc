import Foundation
import Synchronization

/// The ids of notifications this node handled and the broker has not yet confirmed as acknowledged, kept in a file
/// in the node's data directory so that a message redelivered after a restart between handling and acknowledging
/// is recognised and not handled twice.
///
/// The file is an append-only journal: `+ID` when a message was handled, `-ID` once the broker confirmed its
/// acknowledgement (after which it is never sent again, so the id can be forgotten). Each `+ID` is written as soon
/// as the handler returns, so it survives the process being killed; the file is fsynced before an acknowledgement
/// is sent, so it also survives a power loss for everything acknowledged. The journal is rewritten with only the
/// live ids when it has grown well past them.
///
/// `=N` records the queue sequence of the last message handled (the last such line counts), so that a node back from a
/// while away can tell that the broker dropped messages meant for it (its retention): their sequences are missing
/// from what it is sent next. Messages are handled in their queue's order, so a new one with a lower sequence means
/// the queue started again (the TSP's data was reset): the count starts again from it.
public final class ProcessedNotificationLog: Sendable {
    public static let fileName = "notifications-processed.log"

    private struct State {
        var descriptor: Int32
        var ids: Set<String>
        var lines: Int
        var highestSequence: UInt64
    }

    public let path: String
    private let state: Mutex<State>
    /// Serialises fsync with the rewrite, which replaces the descriptor.
    private let syncing = Mutex<Int>(0)

    /// Opens (or creates) the journal in `directory` and reads the ids it holds.
    public static func open(directory: String) throws(NodeError) -> ProcessedNotificationLog {
        try ProcessedNotificationLog(path: (directory as NSString).appendingPathComponent(fileName))
    }

    public init(path: String) throws(NodeError) {
        self.path = path
        var ids: Set<String> = []
        var lines = 0
        var highestSequence: UInt64 = 0
        let existing = FileManager.default.contents(atPath: path)
        if let data = existing {
            for line in data.split(separator: UInt8(ascii: "\n")) {
                guard let text = String(bytes: line.dropFirst(), encoding: .utf8) else { continue }
                switch line.first {
                case UInt8(ascii: "+"): ids.insert(text)
                case UInt8(ascii: "-"): ids.remove(text)
                case UInt8(ascii: "="): highestSequence = UInt64(text) ?? highestSequence
                default: continue  // a line torn by a crash mid-write
                }
                lines += 1
            }
        }
        let descriptor = try Self.openForAppend(path)
        if let last = existing?.last, last != UInt8(ascii: "\n") {
            // A crash tore the last line: end it, so the next record starts a line of its own.
            do throws(NodeError) {
                try Self.append("\n", to: descriptor, path: path)
            } catch {
                _ = close(descriptor)
                throw error
            }
        }
        state = Mutex(State(descriptor: descriptor, ids: ids, lines: lines, highestSequence: highestSequence))
    }

    deinit {
        state.withLock { _ = close($0.descriptor) }
    }

    /// How many handled ids wait for the broker's confirmation.
    public var count: Int { state.withLock { $0.ids.count } }

    /// The handled ids waiting for the broker's confirmation.
    public var ids: [String] { state.withLock { Array($0.ids) } }

    /// The queue sequence of the last message recorded as handled; 0 when none was.
    public var highestSequence: UInt64 { state.withLock { $0.highestSequence } }

    public func contains(_ id: String) -> Bool {
        state.withLock { $0.ids.contains(id) }
    }

    /// Records that the message `id`, at `sequence` in the node's queue, was handled. Ids that cannot be written as
    /// one line are not recorded.
    ///
    /// The message was handled whether or not the line reaches the file, so the id and sequence count in memory
    /// either way: a write that failed (a full disk, an immutable file) left the sequence behind, and every message
    /// after it was then reported as following "notifications lost" that had all come. The next line written
    /// carries the sequence to the file.
    public func record(_ id: String, sequence: UInt64 = 0) throws(NodeError) {
        guard Self.isRecordable(id) else { return }
        try state.withLock { state throws(NodeError) in
            guard state.ids.insert(id).inserted else { return }
            let moved = sequence > 0 && sequence != state.highestSequence
            if moved { state.highestSequence = sequence }
            try Self.append("+" + id + "\n" + (moved ? "=\(sequence)\n" : ""), to: state.descriptor, path: path)
            state.lines += moved ? 2 : 1
        }
    }

    /// Makes everything recorded so far durable (before acknowledging it).
    public func sync() throws(NodeError) {
        try syncing.withLock { _ throws(NodeError) in
            let descriptor = state.withLock { $0.descriptor }
            guard fsync(descriptor) == 0 else {
                throw NodeError(.io, "cannot sync \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The broker confirmed these ids acknowledged: they will not come again.
    public func forget(_ ids: [String]) {
        let rewrite = state.withLock { state -> Bool in
            var journal = ""
            for id in ids where state.ids.remove(id) != nil {
                journal += "-" + id + "\n"
                state.lines += 1
            }
            if !journal.isEmpty { try? Self.append(journal, to: state.descriptor, path: path) }
            return state.lines > 4096 + 2 * state.ids.count
        }
        if rewrite { try? compact() }
    }

    /// Rewrites the journal with only the live ids: a new file, synced, renamed over the old one.
    func compact() throws(NodeError) {
        try syncing.withLock { _ throws(NodeError) in
            try state.withLock { state throws(NodeError) in
                let temporary = path + ".tmp"
                let descriptor = Foundation.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else {
                    throw NodeError(.io, "cannot create \(temporary): \(String(cString: strerror(errno)))")
                }
                let text =
                    (state.highestSequence > 0 ? "=\(state.highestSequence)\n" : "")
                    + state.ids.map { "+" + $0 + "\n" }.joined()
                do throws(NodeError) {
                    try Self.append(text, to: descriptor, path: temporary)
                } catch {
                    _ = close(descriptor)
                    throw error
                }
                guard fsync(descriptor) == 0, rename(temporary, path) == 0 else {
                    _ = close(descriptor)
                    throw NodeError(.io, "cannot replace \(path): \(String(cString: strerror(errno)))")
                }
                _ = close(state.descriptor)
                state.descriptor = descriptor
                state.lines = state.ids.count
            }
        }
    }

    static func isRecordable(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 256 && !id.utf8.contains(UInt8(ascii: "\n"))
    }

    private static func openForAppend(_ path: String) throws(NodeError) -> Int32 {
        let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw NodeError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    private static func append(_ text: String, to descriptor: Int32, path: String) throws(NodeError) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw NodeError(.io, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            bytes = bytes.dropFirst(written)
        }
    }
}
