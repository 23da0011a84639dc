import TokenetTransport
import TokenetWire

/// Call deadlines, kept by the connection in one queue rather than by a timer per call.
///
/// Why: nodes give nearly every call they make a deadline. A sleeping task per client call and a task group with a
/// sleeping child per served call made such calls cost two to three times a call without one. Here a call's
/// deadline is one heap insertion under the lock the call takes anyway, and one check is armed for the earliest
/// deadline (a timer on the stream's loop, or a sleeping task for streams without one). A call that ends in time is
/// not looked for: its id is no longer open when its deadline comes up, and it is skipped; finished calls' entries
/// are dropped in one pass once they outnumber the open calls'.
///
/// The armed check is never later than the earliest open call's deadline: an earlier deadline re-arms it, and when
/// it fires it ends the calls that are due and arms itself for the next open one.
extension RPCConnection {
    /// A call's entry in the deadline queue: its stream id and the timeout it was given (for the caller's message),
    /// in microseconds, the unit the wire gives it in: kept in milliseconds, a deadline under one read "(0 ms)".
    struct CallDeadline: Sendable {
        let id: UInt32
        let microseconds: Int64
    }

    /// The armed check: when it fires, which arming it is, and what cancels it when an earlier deadline comes.
    struct DeadlineCheck {
        let at: ContinuousClock.Instant
        let generation: UInt64
        let cancel: @Sendable () -> Void
    }

    /// Enters the deadline of call `id`, just entered in its table, under the lock. When it passes with the call
    /// still open, a client call ends with DEADLINE_EXCEEDED (and the server is told to cancel it); a served call's
    /// handler task is cancelled, and `RPCServer` makes its status DEADLINE_EXCEEDED.
    func trackDeadline(_ id: UInt32, at deadline: ContinuousClock.Instant, timeout: Duration, core: inout Core) {
        if core.deadlines.count >= 2 * openCallCount(&core) + Self.finishedDeadlinesKept {
            switch role {
            case .client:
                let open = core.clientCalls
                core.deadlines.removeAll { !open.contains($0.id) }
            case .server:
                let open = core.serverCalls
                core.deadlines.removeAll { !open.contains($0.id) }
            }
        }
        let (seconds, attoseconds) = timeout.components
        let microseconds =
            seconds >= Int64.max / 1_000_000 ? Int64.max : seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        core.deadlines.insert(CallDeadline(id: id, microseconds: microseconds), deadline: deadline)
        if let armed = core.deadlineCheck?.at, armed <= deadline { return }
        armDeadlineCheck(at: deadline, core: &core)
    }

    /// How many finished calls' entries the queue may hold beyond twice the open calls before it is compacted.
    static let finishedDeadlinesKept = 64

    /// The armed check fired: ends the calls whose deadline has passed, then arms the check for the next one.
    func expireDeadlines(generation: UInt64) {
        // Handler tasks are cancelled after the lock is released: cancelling runs their cancellation handlers.
        let handlers: [Task<Void, Never>] = core.withLock { core in
            // A check replaced by an earlier one may still fire; it then only does what is due, like any check.
            if core.deadlineCheck?.generation == generation { core.deadlineCheck = nil }
            let now = ContinuousClock.now
            var handlers: [Task<Void, Never>] = []
            while let entry = core.deadlines.removeDue(at: now) {
                switch role {
                case .client:
                    cancelClientCall(
                        entry.id, code: .deadlineExceeded,
                        reason: "the call did not finish within its deadline "
                            + "(\(DurationText.describe(.microseconds(entry.microseconds))))",
                        core: &core)
                case .server:
                    // Requests end with the error first, as for a cancel (`.cancelHandler`): the queue's own
                    // cancellation handler would end them cleanly, and a streaming handler would act on the requests
                    // it had as if the caller had sent them all.
                    guard let call = core.serverCalls[entry.id] else { break }
                    call.requests.finish(throwing: CancellationError())
                    if let task = call.task { handlers.append(task) }
                }
            }
            while let first = core.deadlines.earliest?.value.id, !isOpen(first, &core) {
                core.deadlines.removeEarliest()
            }
            if let next = core.deadlines.earliest?.deadline, core.deadlineCheck.map({ $0.at > next }) ?? true {
                armDeadlineCheck(at: next, core: &core)
            }
            wakeCapacityWaiters(&core)
            return handlers
        }
        for handler in handlers { handler.cancel() }
    }

    /// Arms the check for `deadline`, cancelling the one armed for later.
    ///
    /// The check holds the connection strongly until it fires or is cancelled (`run()` cancels it when the
    /// connection ends): a weak reference would move the connection's reference count to a side table, and every
    /// retain and release of it — dozens per call — would take the slow path.
    private func armDeadlineCheck(at deadline: ContinuousClock.Instant, core: inout Core) {
        core.deadlineCheck?.cancel()
        core.deadlineCheckGeneration &+= 1
        let generation = core.deadlineCheckGeneration
        let cancel: @Sendable () -> Void
        if let loop {
            let timer = loop.scheduleTimer(at: deadline) { self.expireDeadlines(generation: generation) }
            cancel = { loop.cancelTimer(timer) }
        } else {
            let task = Task {
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                self.expireDeadlines(generation: generation)
            }
            cancel = { task.cancel() }
        }
        core.deadlineCheck = DeadlineCheck(at: deadline, generation: generation, cancel: cancel)
    }

    /// `inout` only so that the check borrows the tables instead of copying the whole state.
    private func isOpen(_ id: UInt32, _ core: inout Core) -> Bool {
        role == .client ? core.clientCalls.contains(id) : core.serverCalls.contains(id)
    }

    private func openCallCount(_ core: inout Core) -> Int {
        role == .client ? core.clientCalls.count : core.serverCalls.count
    }
}
