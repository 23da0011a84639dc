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

    /// After a frame from the peer: ends the connection when its peer has stopped reading, by this connection's own
    /// limit or by the server's `unreadBudget`, and returns why; nil when it carries on.
    ///
    /// A connection counts in the budget only while more than `outboundHighWater` bytes wait behind a write, since
    /// below that mark senders wait rather than add; it is closed for the budget only then too, so a peer that reads
    /// does not pay for those that do not. The count is refreshed here, when the peer sends (what it sends is what
    /// grows the bytes that wait), and dropped when the bytes leave for the socket (`releaseUnreadCount`).
    func endIfPeerStoppedReading(_ core: inout Core) -> String? {
        let queued = core.outbound.count
        if queued >= Self.trimHeapAfterBytes { core.heldLargeBuffers = true }
        if peerStoppedReading(core) {
            apply(core.machine.peerStoppedReading(queuedBytes: queued), to: &core)
            return "the peer reads nothing: \(queued) bytes wait for it"
        }
        guard let budget = unreadBudget else { return nil }
        let counted = core.writing && queued > Self.outboundHighWater ? queued : 0
        guard counted != core.unreadCounted else { return nil }
        let within = budget.adjust(by: counted - core.unreadCounted)
        core.unreadCounted = counted
        guard !within, counted > 0 else { return nil }
        apply(core.machine.unreadBudgetExceeded(queuedBytes: queued, limit: budget.limit), to: &core)
        return "over the budget of frames for peers that read nothing: \(queued) bytes wait for it"
    }

    /// The bytes counted in `unreadBudget` have left `outbound` (or the connection ended): they no longer count.
    func releaseUnreadCount(_ core: inout Core) {
        guard core.unreadCounted != 0 else { return }
        _ = unreadBudget?.adjust(by: -core.unreadCounted)
        core.unreadCounted = 0
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
    func wakeCapacityWaitersWhenCancelled() {
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
