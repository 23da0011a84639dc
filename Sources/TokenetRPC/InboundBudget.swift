import Synchronization

/// The bytes of unfinished frames a server holds for all its connections together.
///
/// Each connection may hold one partial frame of up to the maximum frame size (4 MiB) while the rest arrives, and a
/// frame must arrive whole within the keepalive bounds; yet hundreds of connections that each send most of a large
/// frame and then trickle would hold gigabytes between them. Past the budget, a connection that adds to it with a
/// large frame under way is closed; the others carry on.
final class InboundBudget: Sendable {
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

    /// Past the limit, a connection is closed only while it holds more than this of one frame.
    static let largeFrame = 64 << 10
}
