extension RPCConnection {
    /// Bytes of encoded frames the connection holds for the socket before senders must wait.
    static let outboundHighWater = 1 << 20

    /// Whether the peer, which just sent a frame, has left more than `unreadOutboundLimit` bytes unread behind a
    /// write. Senders stop at `outboundHighWater`; what passes it is written without waiting (pongs, statuses, a
    /// message admitted below the mark), and a peer that floods pings or calls while it reads nothing would
    /// otherwise grow it without bound.
    func peerStoppedReading(_ core: Core) -> Bool {
        core.writing && core.outbound.count > unreadOutboundLimit
    }

    /// Returns once the call's queued messages fit in its flow-control window and the connection's outbound buffer
    /// is below its high-water mark, or once the call or the connection is over, or the waiting task is cancelled.
    ///
    /// Why cancellation ends the wait: a server handler whose deadline passes is cancelled, and a handler waiting
    /// here for a client that grants nothing would otherwise never see it; its DEADLINE_EXCEEDED status, and the
    /// end of the call, would wait for the client.
    func waitForSendCapacity(_ id: UInt32) async {
        while !Task.isCancelled {
            let mustWait = core.withLock { core in
                !core.closing && core.machine.streams.contains(id)
                    && (core.machine.pendingBytes(id) > 0 || core.outbound.count > Self.outboundHighWater)
            }
            guard mustWait else { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    core.withLock { core in
                        // Checked under the lock: a cancellation after this finds the waiter and wakes it.
                        let stillFull =
                            !Task.isCancelled && !core.closing && core.machine.streams.contains(id)
                            && (core.machine.pendingBytes(id) > 0 || core.outbound.count > Self.outboundHighWater)
                        if stillFull {
                            core.capacityWaiters.append(continuation)
                        } else {
                            continuation.resume()
                        }
                    }
                }
            } onCancel: {
                wakeCapacityWaitersWhenCancelled()
            }
        }
    }

    /// `wakeCapacityWaiters` for a task cancellation handler, which never waits for `core` (see
    /// `cancelCallWhenCancelled`): at once when the lock is free, else from the loop or a new task an instant later.
    /// Every waiter wakes and checks again; only the cancelled one stops waiting.
    private func wakeCapacityWaitersWhenCancelled() {
        let wokenHere: Bool? = core.withLockIfAvailable { core in
            wakeCapacityWaiters(&core)
            return true
        }
        guard wokenHere == nil else { return }
        let wake: @Sendable () -> Void = { [self] in core.withLock { wakeCapacityWaiters(&$0) } }
        if let loop, loop.execute(wake) { return }
        Task { wake() }
    }

    /// Lets waiting senders check again; called whenever window opens or the outbound buffer drains.
    func wakeCapacityWaiters(_ core: inout Core) {
        guard !core.capacityWaiters.isEmpty else { return }
        let waiters = core.capacityWaiters
        core.capacityWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }
}
