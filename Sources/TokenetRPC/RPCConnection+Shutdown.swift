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

    /// How long a write in progress at the end of the drain may take before the stream is closed under it.
    static let drainWriteGrace: Duration = .milliseconds(500)

    /// The drain period is over: every open call ends UNAVAILABLE with `reason` and the connection closes; the writer
    /// sends the statuses and closes the stream itself. A write in progress gets `drainWriteGrace` to finish: most
    /// often it has just begun (with `--drain-timeout 0`, the goaway), and closing the stream under it at once lost
    /// the statuses queued behind it, so callers saw their connection drop without the reason. One still waiting
    /// after that waits for a peer that reads nothing, and closing the stream cuts it.
    func endDrain(reason: String) {
        let writeWaits = core.withLock { core in
            apply(core.machine.drainTimedOut(reason: reason), to: &core)
            wakeCapacityWaiters(&core)
            return core.writing
        }
        guard writeWaits else { return }
        let check: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            let stuck = core.withLock { core in
                guard !core.finished, core.writing else { return false }
                if core.problem == nil {
                    core.problem = "the peer read nothing more before the node's drain period ended"
                }
                return true
            }
            guard stuck else { return }
            let stream = stream
            Task { await stream.close() }
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
