import Glibc

/// Warns at start of an address-space limit (`ulimit -v`) too low for a node.
///
/// A node reserves address space for its threads' stacks, SQLite's and OpenSSL's memory and the Swift runtime: a
/// debug build of `tsp-node` started and served under 500 MiB and 600 MiB, but under 400 MiB it said READY and then
/// crashed when an allocation failed (SQLite's "out of memory", then a bad pointer), and under 120 MiB it crashed
/// before READY. Allocation failures cannot be answered with a status, so the limit is named at start instead.
public enum AddressSpaceLimit {
    /// Below this the node is warned about: the lowest limit a node was seen to run under, with room to spare.
    public static let comfortable = 1 << 30

    /// Threads a node may start (its event loops, the concurrency runtime's pool, its own helpers), with room.
    public static let threadsNeeded = 64

    /// The soft address-space limit in bytes, or nil when there is none.
    public static func current() -> Int? {
        soft(RLIMIT_AS)
    }

    /// The soft stack-size limit in bytes, which each new thread reserves (glibc's default), or nil when none.
    public static func stack() -> Int? {
        soft(RLIMIT_STACK)
    }

    /// The soft limit on `resource`, or nil when the system does not say (or sets none).
    static func soft(_ resource: __rlimit_resource) -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(resource.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// The warning for an address-space limit of `limit` bytes with threads of `stack` bytes, or nil when they
    /// leave enough or there is none. A large stack limit counts: each thread reserves that much address space, and
    /// a node that could not start the concurrency runtime's threads hung at start, deaf to SIGTERM (the runtime
    /// waits for a thread without end).
    public static func warning(limit: Int?, stack: Int? = nil) -> String? {
        guard let limit else { return nil }
        if limit < comfortable {
            return "the address-space limit is \(limit >> 20) MiB (ulimit -v): a node may fail when it runs short of "
                + "memory, which it cannot answer with a status (it crashed under 400 MiB); give it at least "
                + "\(comfortable >> 20) MiB"
        }
        guard let stack, stack > 0, limit / stack < threadsNeeded else { return nil }
        return "the stack limit is \(stack >> 20) MiB (ulimit -s), which every thread reserves: under the "
            + "address-space limit of \(limit >> 20) MiB (ulimit -v) about \(limit / stack) threads fit, and a node "
            + "that cannot start the threads it needs hangs; lower ulimit -s (8 MiB is usual) or raise ulimit -v"
    }
}
