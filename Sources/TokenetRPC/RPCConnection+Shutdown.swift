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

    /// The drain period is over: every open call ends UNAVAILABLE with `reason` and the connection closes. A write
    /// still waiting for the peer (which reads nothing) is cut by closing the stream, which fails it; otherwise the
    /// writer sends the statuses and closes the stream itself.
    func endDrain(reason: String) {
        let writeWaits = core.withLock { core in
            apply(core.machine.drainTimedOut(reason: reason), to: &core)
            wakeCapacityWaiters(&core)
            if core.writing && core.problem == nil {
                core.problem = "the peer read nothing more before the node's drain period ended"
            }
            return core.writing
        }
        if writeWaits {
            let stream = stream
            Task { await stream.close() }
        }
    }
}
