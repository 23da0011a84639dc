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

    /// The soft address-space limit in bytes, or nil when there is none.
    public static func current() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_AS.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// The warning for `limit` bytes, or nil when it is enough or there is none.
    public static func warning(limit: Int?) -> String? {
        guard let limit, limit < comfortable else { return nil }
        return "the address-space limit is \(limit >> 20) MiB (ulimit -v): a node may fail when it runs short of "
            + "memory, which it cannot answer with a status (it crashed under 400 MiB); give it at least "
            + "\(comfortable >> 20) MiB"
    }
}
