import TokenetWire

/// A served connection's shutdown, in two steps. `beginShutdown` sends the goaway: calls in progress run on, but
/// streams that would never end by themselves (subscriptions) end at once, so that they do not hold the drain.
/// `endDrain`, when the drain period is over, ends whatever is still open and closes the connection, cutting off a
/// peer that has stopped reading.
extension RPCConnection {
    /// What a stream ended by the shutdown is told: the client opens it again elsewhere, or once the node is back.
    static let streamEndedByShutdown = WireV1.Status(
        code: .unavailable, message: "the node is shutting down; open the stream again on a new connection")

    /// Graceful shutdown: goaway, end the streams marked `endsAtShutdown`, let the other calls finish, then close.
    func beginShutdown() {
        perform { core in
            core.shutdownBegun = true
            var actions = core.machine.beginShutdown()
            for id in core.serverCalls.ids.sorted() where core.serverCalls[id]?.endsAtShutdown == true {
                actions += core.machine.endCall(id, Self.streamEndedByShutdown)
            }
            return actions
        }
    }

    /// Server: marks call `id` as a stream that ends when the connection starts its shutdown. False when it cannot
    /// start: the call is over, or the shutdown has begun (its handler started late); the caller then answers
    /// `streamEndedByShutdown` instead of running the handler.
    func endsAtShutdown(_ id: UInt32) -> Bool {
        core.withLock { core in
            guard !core.shutdownBegun else { return false }
            return core.serverCalls.update(id) { $0.endsAtShutdown = true } != nil
        }
    }

    /// Server: call `id` no longer ends at the start of the shutdown (its handler ends it itself from now on).
    func keepsThroughShutdown(_ id: UInt32) {
        core.withLock { core in _ = core.serverCalls.update(id) { $0.endsAtShutdown = false } }
    }

    /// How long one write in progress at the end of the drain may go on before the stream is closed under it.
    static let drainWriteGrace: Duration = .milliseconds(500)

    /// The drain period is over: every open call ends UNAVAILABLE with `reason` and the connection closes; the writer
    /// sends the statuses and closes the stream itself. A write in progress is most often one that has just begun
    /// (with `--drain-timeout 0`, the goaway), and closing the stream under it at once lost the statuses queued
    /// behind it, so callers saw their connection drop without the reason. The stream is closed only once one write
    /// has gone on for `drainWriteGrace`: that one waits for a peer that reads nothing. (Writes that go on, one
    /// after another, are the stuck-write close's to bound, `timers.stuckWriteGrace`.)
    func endDrain(reason: String) {
        let write: UInt64? = core.withLock { core in
            apply(core.machine.drainTimedOut(reason: reason), to: &core)
            wakeCapacityWaiters(&core)
            return core.writing ? core.writesBegun : nil
        }
        if let write { closeIfStuck(in: write) }
    }

    /// Closes the stream if write number `write` is still in progress `drainWriteGrace` from now; if a later write
    /// is, looks again later.
    private func closeIfStuck(in write: UInt64) {
        let check: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            enum Verdict {
                case done, stuck
                case later(UInt64)
            }
            let verdict: Verdict = core.withLock { core in
                guard !core.finished, core.writing else { return .done }
                guard core.writesBegun == write else { return .later(core.writesBegun) }
                if core.problem == nil {
                    core.problem = "the peer read nothing more before the node's drain period ended"
                }
                return .stuck
            }
            switch verdict {
            case .done: return
            case .later(let next): closeIfStuck(in: next)
            case .stuck:
                let stream = stream
                Task { await stream.close() }
            }
        }
        if let loop {
            loop.scheduleTimer(after: Self.drainWriteGrace, check)
            return
        }
        Task {
            try? await Task.sleep(for: Self.drainWriteGrace)
            check()
        }
    }
}

extension RPCError {
    /// Whether the server ended the call because it is shutting down (a subscription ended at its goaway): a peer
    /// stopping cleanly, which a client reconnects after, not a failure.
    public var isStreamEndedByShutdown: Bool {
        code == .unavailable && message == RPCConnection.streamEndedByShutdown.message
    }
}
