import TokenetWire

/// How many frames that do no work a peer may send: pings, pongs, empty frames (or frames of a kind from a later
/// version) and window updates on stream 0, which this side decodes, answers (a ping) or ignores, whatever they cost
/// it. Each is cheap; sent in a loop on a few connections, they kept a node's loop thread busy and every other
/// client waiting seconds for its calls, and the node went on working through what the kernel had buffered for
/// half a minute after the sender stopped.
///
/// A token bucket: `burst` frames at once (`ConnectionSettings.workFreeFrameBurst`, 1,000), then a tenth of that a
/// second on average. Tokenet's own peers send one ping per keepalive interval; the limit is far above what any
/// peer needs. The driver measures time and asks; the state machine ends the connection
/// (`ConnectionStateMachine.workFreeFramesExceeded`).
struct WorkFreeFrameAllowance: Sendable {
    let burst: Double
    var perSecond: Double { burst / 10 }

    private var tokens: Double
    private var refilledAt: ContinuousClock.Instant?

    init(burst: Int = ConnectionSettings.defaults.workFreeFrameBurst) {
        self.burst = Double(max(burst, 1))
        tokens = self.burst
    }

    /// Whether `frame` does no work (see the type's comment).
    static func isWorkFree(_ frame: WireV1.Frame) -> Bool {
        switch frame.kind {
        case nil, .ping?, .pong?: true
        case .windowUpdate?: frame.streamID == 0
        default: false
        }
    }

    /// Takes one frame's allowance at `now`; false once the peer has sent more than the limit allows.
    mutating func take(at now: ContinuousClock.Instant = .now) -> Bool {
        if let refilledAt {
            let elapsed = now - refilledAt
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(burst, tokens + max(0, seconds) * perSecond)
        }
        refilledAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// The limit in words, for the goaway's reason.
    var description: String {
        "\(Int(burst)) at once and \(Int(perSecond)) a second after that"
    }
}
