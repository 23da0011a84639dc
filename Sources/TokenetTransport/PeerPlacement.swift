import CTokenetShims

/// Whether the peer of a connection runs on the same CPU as this end, which only a loopback peer can.
///
/// Writers use it to choose between two ways of sending a burst: in pieces, so that a peer on another CPU starts
/// on the first calls while this end encodes the rest, or whole, when the peer shares the CPU and cannot start
/// before this end yields it — then the pieces only add TLS records, `send`s and context switches. On loopback
/// the kernel processes a segment on the CPU that sent it, so the socket's incoming CPU (SO_INCOMING_CPU) is
/// where the peer last ran when it sent; it is compared with this thread's CPU. Processes migrate, so the answer is
/// sampled again after `refreshIntervalNanoseconds`. Lives on the loop thread of its connection.
struct PeerPlacement {
    /// How long a sample stands: long enough that the `getsockopt` is negligible next to a burst, short enough
    /// to follow the scheduler moving either process.
    static let refreshIntervalNanoseconds: Int64 = 1_000_000

    private let fd: Int32
    private var loopback: Bool?
    private var sampledAt = -refreshIntervalNanoseconds
    private var sharesCPU = false

    init(fd: Int32) {
        self.fd = fd
    }

    /// The latest sample, refreshed when older than `refreshIntervalNanoseconds`. Always false for a peer that
    /// is not on loopback: for it the incoming CPU is where the network card's interrupt was handled.
    mutating func peerSharesCPU() -> Bool {
        if loopback == nil { loopback = ctk_peer_is_loopback(fd) == 1 }
        guard loopback == true else { return false }
        let now = ctk_monotonic_ns()
        if now - sampledAt >= Self.refreshIntervalNanoseconds {
            sampledAt = now
            sharesCPU = Self.sameCPU(incoming: ctk_incoming_cpu(fd), current: ctk_current_cpu())
        }
        return sharesCPU
    }

    /// Both known (the socket has received something, and the thread's CPU could be read) and equal.
    static func sameCPU(incoming: Int32, current: Int32) -> Bool {
        incoming >= 0 && incoming == current
    }
}
