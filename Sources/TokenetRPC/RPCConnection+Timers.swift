import Foundation

/// Keepalive and idle limits of one connection. Both are off unless set.
public struct ConnectionTimers: Sendable {
    /// Ping the peer after this long without receiving anything.
    public var keepaliveInterval: Duration?
    /// Close the connection when a ping stays unanswered this long.
    public var keepaliveTimeout: Duration
    /// Close a connection that has had no open call for this long (goaway IDLE_TIMEOUT).
    public var idleTimeout: Duration?
    /// Close a connection whose peer has not sent its hello this long after it opened (goaway PROTOCOL_ERROR):
    /// whatever answered does not speak Tokenet, or hangs, and a call without a deadline would wait forever. Off by
    /// default: a busy peer (a node whose threads are all at work) may take long to greet, and its calls have
    /// deadlines; the `tokenet` CLI sets it, since a person waits at the other end, and a node sets it on the
    /// connections it serves when told to (`--hello-timeout`).
    public var helloTimeout: Duration?
    /// How long a closing connection may take to write what it still holds before its stream is reset under it
    /// (see `RPCConnection.armStuckWriteClose`).
    public var stuckWriteGrace: Duration

    public init(
        keepaliveInterval: Duration? = nil, keepaliveTimeout: Duration = .seconds(20), idleTimeout: Duration? = nil,
        helloTimeout: Duration? = nil, stuckWriteGrace: Duration = .seconds(10)
    ) {
        self.keepaliveInterval = keepaliveInterval
        self.keepaliveTimeout = keepaliveTimeout
        self.idleTimeout = idleTimeout
        self.helloTimeout = helloTimeout
        self.stuckWriteGrace = stuckWriteGrace
    }

    /// How long one frame may take to arrive whole once its first bytes came: as long as a silent peer is given
    /// (a ping after `keepaliveInterval`, then `keepaliveTimeout` for the pong). A peer that trickles a byte now
    /// and then is never silent, and would otherwise hold the partial frame (up to the maximum frame size) for as
    /// long as it likes. Nil without keepalive.
    var frameTimeout: Duration? { keepaliveInterval.map { $0 + keepaliveTimeout } }

    /// Whether the connection runs a timer at all.
    public var isEnabled: Bool { keepaliveInterval != nil || idleTimeout != nil }

    /// How often the timer task looks: often enough for the shortest limit, never busier than every 10 ms.
    var tick: Duration {
        let limits = [keepaliveInterval, idleTimeout, keepaliveInterval.map { _ in keepaliveTimeout }].compactMap { $0 }
        return max((limits.min() ?? .seconds(1)) / 4, .milliseconds(10))
    }
}

extension RPCConnection {
    /// Something arrived from the peer: it is alive.
    func noteReceived() {
        core.withLock { core in
            core.lastReceived = .now
            if core.machine.hasOpenCalls { core.lastCallActivity = .now }
        }
    }

    /// Checks the keepalive and idle limits until the connection closes. The decisions are the state machine's;
    /// this loop only measures time.
    ///
    /// Time this process did not run is not charged to the peer. A node stopped (SIGSTOP, a debugger) or starved
    /// on a stalled machine wakes with its peer's answers waiting in the socket, and this task, on another thread
    /// than the event loop that reads them, can look first: the ping's and the partial frame's clocks move on by
    /// however late this tick woke, so the loop gets a tick to read what came meanwhile.
    func timerLoop() async {
        let tick = timers.tick
        while !Task.isCancelled {
            let due = ContinuousClock.now + tick
            guard (try? await Task.sleep(for: tick)) != nil else { return }
            let closing = core.withLock { core -> Bool in
                if core.closing { return true }
                let now = ContinuousClock.now
                let late = now - due
                if late > .zero {
                    core.outstandingPing?.sentAt += late
                    core.frameStartedAt? += late
                }
                if core.machine.hasOpenCalls { core.lastCallActivity = now }
                // First: a frame left incomplete is the more precise diagnosis when a peer that stalled inside a
                // frame also left a ping unanswered (both limits then come due in the same tick).
                if let limit = timers.frameTimeout, let started = core.frameStartedAt, now - started >= limit {
                    apply(core.machine.frameTimedOut(after: "\(limit)"), to: &core)
                }
                if !core.closing, let ping = core.outstandingPing, now - ping.sentAt >= timers.keepaliveTimeout {
                    apply(core.machine.keepaliveTimedOut(), to: &core)
                } else if !core.closing, let interval = timers.keepaliveInterval, core.outstandingPing == nil,
                    now - core.lastReceived >= interval
                {
                    let payload = UInt64.random(in: 1...UInt64.max)
                    core.outstandingPing = (payload, now)
                    apply(core.machine.ping(payload: payload), to: &core)
                    // Sent from the loop, not by the writer task: the ping's clock runs from now, and a node whose
                    // threads are all busy would otherwise hold its own ping back until it timed out.
                    if let loop, !core.closing { scheduleLoopFlush(&core, loop) }
                }
                if let idle = timers.idleTimeout, now - core.lastCallActivity >= idle {
                    let helloDue = timers.helloTimeout.map { $0 <= idle } ?? false
                    apply(core.machine.idleTimedOut(after: "\(idle)", helloDue: helloDue), to: &core)
                }
                return core.closing
            }
            if closing { return }
        }
    }
}
