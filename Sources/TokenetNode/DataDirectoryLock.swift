import Foundation
import Synchronization

/// A node's exclusive hold on its data directory, from start until it stops.
///
/// Two nodes on one data directory would share its SQLite database and journals: both would serve the same
/// notification queues, append to the same processed-message log and, holding one identity, replace each other's
/// subscription at the TSP again and again. The second node is refused at start instead. The hold is an flock(2)
/// on `node.lock`, which the kernel releases when the process ends, also after a crash or SIGKILL, so a stale
/// lock never needs cleaning up; `node.lock` also holds the holder's pid, for the refusal. The directory itself is
/// locked the same way first: a `node.lock` deleted while its node ran let a second node lock a new file of that name
/// and run on the same database.
///
/// `tokenet up --dir` takes one of its own (`up.lock`) the same way, before it touches anything in the directory.
public final class DataDirectoryLock: Sendable {
    public static let fileName = "node.lock"

    private let descriptor: Int32
    private let directoryDescriptor: Int32
    private let released = Atomic<Bool>(false)

    /// Takes the lock, or says which process holds it (`FLAG: DIRECTORY is in use by another OWNER (pid N)`).
    public init(
        directory: String, fileName: String = DataDirectoryLock.fileName, flag: String = "--data-dir",
        owner: String = "node"
    ) throws(NodeError) {
        let path = (directory as NSString).appendingPathComponent(fileName)
        let inUse = { (other: String, holder: String) in
            NodeError(
                .config,
                "\(flag): \(directory) is in use by another \(other)\(holder); give each \(owner) a directory of its own"
            )
        }
        var directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else {
            throw NodeError(.io, "cannot open \(directory)", cause: SystemCallError(call: "open", errno: errno))
        }
        if flock(directoryDescriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(directoryDescriptor)
            directoryDescriptor = -1
            // A file system that cannot lock a directory (NFS emulates flock with byte-range locks, which a
            // directory opened for reading does not take) leaves the lock file alone to hold it, as before.
            if code == EWOULDBLOCK {
                // The holder (a node, or a `tokenet up` on the same directory) holds its lock file too, which names
                // its pid, unless that was deleted.
                let holder = Self.heldLockFile(in: directory, ownFirst: fileName)
                throw inUse(holder?.0 ?? "Tokenet process", holder?.1 ?? "")
            }
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            if directoryDescriptor >= 0 { close(directoryDescriptor) }
            throw NodeError(.io, "cannot open \(path)", cause: SystemCallError(call: "open", errno: code))
        }
        // Still taken, for a node of an earlier version that locks the file alone.
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = Self.recordedPID(descriptor).map { " (pid \($0))" } ?? ""
            close(descriptor)
            if directoryDescriptor >= 0 { close(directoryDescriptor) }
            guard code == EWOULDBLOCK else {
                throw NodeError(.io, "cannot lock \(path)", cause: SystemCallError(call: "flock", errno: code))
            }
            throw inUse(owner, holder)
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } }
        self.descriptor = descriptor
        self.directoryDescriptor = directoryDescriptor
    }

    /// Lets the next node in: called once the node has stopped serving. Only the first call closes the descriptor,
    /// which the process may otherwise have reused for something else by a second one.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        close(descriptor)
        if directoryDescriptor >= 0 { close(directoryDescriptor) }
    }

    /// The lock files of the processes that hold a directory, and who they are: a node's data directory, and
    /// `tokenet up`'s sandbox, which both lock the directory itself.
    static let lockFiles = [
        (fileName: DataDirectoryLock.fileName, owner: "node"), (fileName: "up.lock", owner: "tokenet up"),
    ]

    /// Which of `lockFiles` in `directory` another process holds now, and the pid it wrote there; its own first. A
    /// lock file left by a process that has ended names a pid too, so the one locked now is the one asked for.
    private static func heldLockFile(in directory: String, ownFirst fileName: String) -> (String, String)? {
        let ordered = lockFiles.filter { $0.fileName == fileName } + lockFiles.filter { $0.fileName != fileName }
        for lock in ordered {
            let descriptor = open((directory as NSString).appendingPathComponent(lock.fileName), O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            guard flock(descriptor, LOCK_EX | LOCK_NB) != 0, errno == EWOULDBLOCK else { continue }
            return (lock.owner, recordedPID(descriptor).map { " (pid \($0))" } ?? "")
        }
        return nil
    }

    private static func recordedPID(_ descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
