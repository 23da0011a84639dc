import Synchronization

/// Bytes a server holds for all its connections together, against one limit: the unfinished frames of its peers
/// (`RPCServer.inboundBudget`), the requests of calls that have not ended their requests (`requestBudget`), and the
/// frames waiting for peers that read nothing (`unreadBudget`).
///
/// Each connection has limits of its own: one partial frame of up to the maximum frame size (4 MiB) while the rest
/// arrives, a frame must arrive whole within the keepalive bounds, and at most `unreadOutboundLimit` bytes may wait
/// for a peer that does not read. Yet hundreds of connections that each send most of a large frame and then trickle,
/// or that each flood calls while reading nothing, would hold gigabytes between them. Past the budget, a connection
/// that adds to it with a large amount of its own is closed; the others carry on.
final class ByteBudget: Sendable {
    private let held = Atomic<Int>(0)
    private let limitBytes: Atomic<Int>

    init(limit: Int) {
        limitBytes = Atomic(limit)
    }

    var limit: Int {
        get { limitBytes.load(ordering: .relaxed) }
        set { limitBytes.store(newValue, ordering: .relaxed) }
    }

    /// The bytes now held by every connection.
    var total: Int { held.load(ordering: .relaxed) }

    /// Adds `delta` (negative when frames completed or a connection ended); whether the total is within the limit.
    func adjust(by delta: Int) -> Bool {
        guard delta != 0 else { return total <= limit }
        return held.add(delta, ordering: .relaxed).newValue <= limit
    }

    /// 256 MiB: some sixty peers each in the middle of a frame of the largest size.
    static let defaultLimit = 256 << 20

    /// 128 MiB of frames waiting for peers that read nothing: sixteen connections at their own limit
    /// (`ConnectionSettings.unreadOutboundLimit`, 8 MiB). What a connection holds counts only while its peer has
    /// left more than `RPCConnection.outboundHighWater` unread.
    static let defaultUnreadLimit = 128 << 20

    /// Past the limit, a connection is closed only while it holds more than this of one frame.
    static let largeFrame = 64 << 10
}
