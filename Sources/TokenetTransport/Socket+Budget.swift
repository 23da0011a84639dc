import Glibc
import Synchronization

extension Socket {
    /// Descriptors kept free for everything in the process that is not one of the transport's sockets: the
    /// database and its journal files, logs, the event loops' epoll and timer descriptors, and the files the
    /// runtime opens on its own. libdispatch reads `/proc/TID/stat` once a second while its queues are busy, and
    /// stops the process when that `open` fails: a node whose peers held every descriptor was killed that way.
    public static let reservedDescriptors = 32

    /// Sockets the transport holds open in this process: listeners, accepted connections and connection attempts.
    static let openCount = Atomic<Int>(0)

    /// The sockets the process may hold before its listeners stop accepting: the file-descriptor limit less
    /// `reservedDescriptors` (but at least half the limit); nil when the system sets no limit.
    static let budget: Int? = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        let descriptors = Int(clamping: limit.rlim_cur)
        return max(descriptors - reservedDescriptors, descriptors / 2)
    }()

    /// Why a listener accepts nothing now, or nil when it may: the sockets open have reached `budget`.
    static func acceptRefusal() -> TransportError? {
        guard let budget else { return nil }
        let open = openCount.load(ordering: .relaxed)
        guard open >= budget else { return nil }
        return TransportError(
            .io,
            "cannot accept connections: \(open) sockets are open, the most the file-descriptor limit of "
                + "\(openFileLimit) (ulimit -n) allows with \(reservedDescriptors) descriptors kept for the "
                + "process's own files, so new connections wait until some close: raise the limit (ulimit -n) or "
                + "look for peers that hold many connections open")
    }

    /// Counts a socket just opened (`socket`, `accept4`).
    static func opened(_ fd: Int32) -> Int32 {
        if fd >= 0 { openCount.add(1, ordering: .relaxed) }
        return fd
    }
}
