import CTokenetShims
import Dispatch
import Synchronization

/// The process heap, for the one thing the runtime asks of it directly.
public enum Heap {
    /// Gives free heap memory back to the system. glibc keeps the pages of freed blocks for later allocations, so
    /// a node that held megabytes for peers that stopped reading kept its peak size after they had gone (a node
    /// measured at 620 MB with 2 MB in use). It walks every arena, so it is for rare moments: after a connection that
    /// held a large buffer ends, not after every call.
    public static func trim() { ctk_trim_heap() }

    /// `trim()` once, a second from now, however many ask meanwhile: connections that end together (a peer's many
    /// connections cut at once) trim once, after what they held has been let go on every thread.
    public static func trimSoon() {
        trimsAsked.add(1, ordering: .relaxed)
        guard !trimScheduled.exchange(true, ordering: .relaxed) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) {
            trimScheduled.store(false, ordering: .relaxed)
            trim()
        }
    }

    private static let trimScheduled = Atomic<Bool>(false)
    /// How many times `trimSoon()` was asked for, for tests of what asks for it.
    static let trimsAsked = Atomic<Int>(0)
}
