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
    ///
    /// `id` nil: for a call not yet opened, which waits only for the outbound buffer (`waitForRoomToOpen`).
    func waitForSendCapacity(_ id: UInt32?) async {
        while !Task.isCancelled {
            guard core.withLock({ Self.mustWaitForCapacity(id, $0) }) else { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    core.withLock { core in
                        // Checked under the lock: a cancellation after this finds the waiter and wakes it.
                        if !Task.isCancelled && Self.mustWaitForCapacity(id, core) {
                            core.capacityWaiters.append(CapacityWaiter(.capacity(streamID: id), continuation))
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

    /// Whether a sender must still wait: its call's queued messages do not fit its window, or the outbound buffer is
    /// over its high-water mark (`id` nil: only the latter), and neither the call nor the connection is over.
    static func mustWaitForCapacity(_ id: UInt32?, _ core: Core) -> Bool {
        guard !core.closing else { return false }
        guard let id else { return core.outbound.count > outboundHighWater }
        return core.machine.streams.contains(id)
            && (core.machine.pendingBytes(id) > 0 || core.outbound.count > outboundHighWater)
    }

    /// Why a unary call was not opened (`openCall(unlessFull:)`): more than `outboundHighWater` bytes wait for the
    /// peer. Its caller waits for room (`waitForRoomToOpen`) and tries again, so a peer that stops reading holds
    /// callers, each until its deadline, instead of the bytes of every call made meanwhile.
    struct NoRoomToOpen: Error, CustomStringConvertible {
        static let reason = "the connection's outbound buffer is full"
        var description: String { Self.reason }
    }

    /// Waits until a call can be opened without growing the outbound buffer past its high-water mark, and returns
    /// what is left of `timeout`. Throws DEADLINE_EXCEEDED when `timeout`, or the deadline of the call being
    /// served, passes first, and CANCELLED when the calling task is cancelled.
    nonisolated(nonsending) func waitForRoomToOpen(_ path: String, timeout: Duration?) async throws(RPCError)
        -> Duration?
    {
        let started = ContinuousClock.now
        var deadline = timeout.map { started + $0 }
        if let served = ServerContext.current?.deadline { deadline = min(deadline ?? served, served) }
        let roomMade = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.waitForSendCapacity(nil)
                return true
            }
            if let deadline {
                group.addTask {
                    try? await Task.sleep(until: deadline)
                    return false
                }
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        if Task.isCancelled {
            throw RPCError(
                .cancelled, "the calling task was cancelled while \(path) waited to be sent",
                cause: NotConnected(reason: "cancelled before the call started"))
        }
        guard roomMade else {
            let waited = DurationText.describe(ContinuousClock.now - started)
            throw RPCError(
                .deadlineExceeded,
                "the deadline passed before \(path) could be sent: the peer has not read what this side sent"
                    + " (more than \(Self.outboundHighWater / 1024) KiB wait for it; the call waited \(waited) for room)",
                cause: NotConnected(reason: "the deadline passed before the call started"))
        }
        return timeout.map { $0 - (ContinuousClock.now - started) }
    }

    /// `wakeCapacityWaiters` for a task cancellation handler, which never waits for `core` (see
    /// `cancelCallWhenCancelled`): at once when the lock is free, else from the loop or a new task an instant later.
    /// Every waiter wakes and checks again; only the cancelled one stops waiting.
    func wakeCapacityWaitersWhenCancelled() {
        let wokenHere: Bool? = core.withLockIfAvailable { core in
            wakeCapacityWaiters(&core, all: true)
            return true
        }
        guard wokenHere == nil else { return }
        let wake: @Sendable () -> Void = { [self] in core.withLock { wakeCapacityWaiters(&$0, all: true) } }
        if let loop, loop.execute(wake) { return }
        Task { wake() }
    }

    /// Wakes the waiters whose wait is over; called whenever window opens, the outbound buffer drains, a frame
    /// arrives or the connection ends. Each waiter's condition is checked here, under the lock, so a sender whose
    /// call still has no window stays asleep: with a thousand senders held by a slow peer, waking them all on every
    /// chunk read cost a thousand task switches per chunk, for the one or two that could send. `all` wakes every
    /// waiter (a task was cancelled, and the waiter does not say which task it is); each one checks again.
    func wakeCapacityWaiters(_ core: inout Core, all: Bool = false) {
        guard !core.capacityWaiters.isEmpty else { return }
        // Those still waiting are moved to the front, in their order; the rest are woken.
        var kept = 0
        for index in core.capacityWaiters.indices {
            let waiter = core.capacityWaiters[index]
            let waits: Bool
            switch waiter.kind {
            case .capacity(let id): waits = !all && Self.mustWaitForCapacity(id, core)
            case .hello: waits = !all && Self.awaitsHello(core)
            }
            if waits {
                core.capacityWaiters[kept] = waiter
                kept += 1
            } else {
                waiter.continuation.resume()
                core.capacityWakeups &+= 1
            }
        }
        core.capacityWaiters.removeLast(core.capacityWaiters.count - kept)
    }
}

/// A task waiting on a connection, and for what (`RPCConnection.wakeCapacityWaiters`).
struct CapacityWaiter {
    enum Kind {
        /// Room to send on a call (nil: to open one).
        case capacity(streamID: UInt32?)
        /// The peer's hello.
        case hello
    }

    let kind: Kind
    let continuation: CheckedContinuation<Void, Never>

    init(_ kind: Kind, _ continuation: CheckedContinuation<Void, Never>) {
        self.kind = kind
        self.continuation = continuation
    }
}
