import TokenetTransport

/// Waiting for the peer's hello: a client channel counts a connection as made only once the server has greeted it.
///
/// In TLS 1.3 the client's side of the handshake ends before the server has checked the client's certificate: a
/// server that refuses it (expired, of another CA) does so in its first record after the handshake, which the client
/// reads as a connection lost "before its hello". Counted as made when the handshake ended, such a connection reset
/// the channel's backoff and was logged as the peer "reached again", and the refusal itself was only ever seen at
/// debug level, once a second.
extension RPCConnection {
    private enum Greeting {
        case greeted
        case ended(any Error)
        case waiting
    }

    /// Returns once the peer's hello has arrived; throws the connection's failure when it ended first (the
    /// transport's own error when reading failed, so a refused certificate stays one), or `CancellationError`.
    func waitForPeerHello() async throws {
        while true {
            try Task.checkCancellation()
            switch core.withLock({ Self.greeting(of: $0) }) {
            case .greeted: return
            case .ended(let error): throw error
            case .waiting: break
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let waiting = core.withLock { core in
                        guard !Task.isCancelled, case .waiting = Self.greeting(of: core) else { return false }
                        // Woken with the senders waiting for capacity: after each frame read and at the end.
                        core.capacityWaiters.append(CapacityWaiter(.hello, continuation))
                        return true
                    }
                    if !waiting { continuation.resume() }
                }
            } onCancel: {
                wakeCapacityWaitersWhenCancelled()
            }
        }
    }

    /// Whether the connection is still waiting for the peer's hello (and has not ended).
    static func awaitsHello(_ core: Core) -> Bool {
        if case .waiting = greeting(of: core) { return true }
        return false
    }

    private static func greeting(of core: Core) -> Greeting {
        if core.machine.peerHelloReceived {
            // A hello the peer closed the connection right behind (a goaway TOO_MANY_CONNECTIONS, which follows the
            // hello, usually in the same read): no connection was made. Counted as one, it reset the channel's
            // backoff, and a wallet refused by its TSP reconnected hundreds of times a second.
            if core.machine.state == .closed, let problem = core.problem {
                return .ended(core.transportFailure ?? TransportError(.io, problem))
            }
            return .greeted
        }
        let ended = core.finished || core.closing || core.machine.state == .closed || core.machine.state == .draining
        guard ended else { return .waiting }
        if let failure = core.transportFailure { return .ended(failure) }
        return .ended(
            TransportError(.io, core.problem ?? "the peer closed the connection before its hello"))
    }
}
