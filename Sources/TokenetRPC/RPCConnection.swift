import Foundation
import Synchronization
import TokenetTransport
import TokenetWire

/// Drives one connection: reads frames into the `ConnectionStateMachine` and carries out the actions it returns.
///
/// All protocol decisions live in the state machine; this class only moves bytes, wakes waiting calls and starts or
/// cancels handler tasks. Frames are encoded under the state lock into one outbound buffer, so their order on the
/// wire is the order of the machine's actions, and a single writer task drains the buffer — coalescing whatever
/// accumulated while the previous write was in flight into one write.
///
/// When the stream runs on an event loop and frames are encoded on that loop's thread (a caller or handler task
/// running on the loop executor, or frames produced while reading), the writer task is not involved: one flush is
/// queued on the loop behind the work already queued there, so every frame encoded in that loop iteration leaves
/// in one engine write and one `send`, without any thread hop (`RPCConnection+LoopFlush.swift`).
final class RPCConnection: Sendable {
    /// What the server side does with a new call; the client side passes nil.
    typealias CallHandler = nonisolated(nonsending) @Sendable (ServerCall) async -> Void

    struct ClientCallState {
        var responses: MessageQueue
        /// `CallOptions.onTrailers`.
        var onTrailers: (@Sendable (Metadata) -> Void)?
    }

    struct ServerCallState {
        var requests: MessageQueue
        var task: Task<Void, Never>?
        /// A stream that would outlive any drain: it ends as soon as the server's shutdown begins
        /// (`RPCConnection+Shutdown.swift`).
        var endsAtShutdown = false
        /// Request bytes counted in the server's `requestBudget` (`RPCConnection+RequestBudget.swift`).
        var heldRequestBytes = 0
    }

    struct Core {
        var machine: ConnectionStateMachine
        var encoder: FrameEncoder
        var outbound: [UInt8] = []
        /// Frames in `outbound`: the loop flush's early rule counts them (see `earlyFlushFrames`).
        var outboundFrames = 0
        /// The batch in `outbound` leaves whole (the peer shares this end's CPU): asked once per batch.
        var outboundWhole = false
        /// The last batch the loop flush handed to the stream, kept once written so the next batch reuses its
        /// storage: a batch built in a fresh array regrows (and copies itself) several times as frames are added.
        var spareOutbound: [UInt8] = []
        var writer: CheckedContinuation<Void, Never>?
        var closing = false
        /// `beginShutdown` ran: streams marked `endsAtShutdown` have ended, and a new one ends at once.
        var shutdownBegun = false
        /// Why the connection ended, when it was not a clean close by either side: the first connection error
        /// (sent or received in a goaway) or transport failure. The server's connection log reports it.
        var problem: String?
        /// The transport's error when reading failed, kept as it is (a refused certificate) for `waitForPeerHello`.
        var transportFailure: TransportError?
        var clientCalls = StreamTable<ClientCallState>()
        var serverCalls = StreamTable<ServerCallState>()
        var closedWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
        /// Keepalive and idle bookkeeping, read by the timer task.
        var lastReceived = ContinuousClock.now
        /// When the frame now partly received began to arrive; nil between frames (see `frameTimeout`).
        var frameStartedAt: ContinuousClock.Instant?
        /// The bytes of the partly received frame this connection has counted in its server's `inboundBudget`.
        var budgeted = 0
        /// The request bytes this connection's calls have counted in its server's `requestBudget`.
        var requestBytesHeld = 0
        /// The connection held a megabyte or more at once, of peer input (requests its calls kept, a frame partly
        /// received) or of frames waiting for a peer that kept sending while it read nothing, so the heap is trimmed
        /// when it ends. What waited for the peer may be gone from `outbound` by then (taken by a write that the
        /// reset failed), so the mark is set while it is held.
        var heldLargeBuffers = false
        /// The bytes of `outbound` counted in the server's `unreadBudget` (`RPCConnection+Backpressure.swift`).
        var unreadCounted = 0
        var lastCallActivity = ContinuousClock.now
        var outstandingPing: (payload: UInt64, sentAt: ContinuousClock.Instant)?
        /// What is left of the peer's allowance of frames that do no work.
        var workFreeFrames = WorkFreeFrameAllowance()
        /// Senders waiting for flow-control window or for the outbound buffer to drain, and channels waiting for
        /// the peer's hello: each is woken only once what it waits for has come (`wakeCapacityWaiters`).
        var capacityWaiters: [CapacityWaiter] = []
        /// How many of them have been woken, over the connection's life (a figure for tests and diagnostics).
        var capacityWakeups = 0
        /// A write to the stream is in progress (by the writer task or by a caller flushing its own frames).
        var writing = false {
            didSet { if writing && !oldValue { writesBegun &+= 1 } }
        }
        /// How many writes have begun: the end of a drain tells a write that is stuck from writes that go on.
        var writesBegun: UInt64 = 0
        /// The `writesBegun` of the writer task's last write once the stream has taken it: while it is the current
        /// one, the write is over but for the writer task's own bookkeeping, and the loop may take over
        /// (`writeThroughLoop`, `loopFlush`).
        var writeAccepted: UInt64 = 0
        /// The loop had frames to flush while the writer task's write was in progress: it flushes them once the
        /// stream has taken that write.
        var loopFlushDeferred = false
        /// Set while a caller encodes frames it will flush itself, so the writer task is not woken for them.
        var callerFlushes = false
        /// Push-mode reading (`ByteStream.receive`): whether it was started before `run()` (`startReceivingEarly`;
        /// nil when not), the decoder, and whether and how reading ended.
        var pushReceiving: Bool?
        var decoder: FrameDecoder?
        var readingDone = false
        var readingEnded: CheckedContinuation<Void, Never>?
        /// A flush is queued on the stream's loop (`scheduleLoopFlush`).
        var loopFlushScheduled = false
        /// The open calls' deadlines and the one check armed for the earliest (`RPCConnection+Deadlines.swift`).
        var deadlines = DeadlineHeap<CallDeadline>()
        var deadlineCheck: DeadlineCheck?
        var deadlineCheckGeneration: UInt64 = 0

        /// Lets `encode` write one frame at the end of `outbound`, counted for the loop flush's early rule; nil
        /// from `encode` means it wrote nothing.
        mutating func appendFrame<Result>(_ encode: (FrameEncoder, inout [UInt8]) throws -> Result?) rethrows
            -> Result?
        {
            if outbound.isEmpty {
                outboundFrames = 0
                outboundWhole = false
            }
            guard let result = try encode(encoder, &outbound) else { return nil }
            outboundFrames += 1
            return result
        }
    }

    let stream: any ByteStream
    let role: ConnectionStateMachine.Role
    let core: Mutex<Core>
    private let handler: CallHandler?
    /// Server: told of each call answered before a handler started (`ConnectionStateMachine.Action.refusedCall`).
    let refusalHandler: (@Sendable (WireV1.CallStart?, WireV1.Status) -> Void)?
    let maximumInboundFrameSize: Int
    /// See `ConnectionSettings.unreadOutboundLimit`.
    let unreadOutboundLimit: Int
    let timers: ConnectionTimers
    /// The server's budget for unfinished frames across its connections; nil for clients.
    let inboundBudget: ByteBudget?
    /// The server's budget for requests of calls that have not ended their requests; nil for clients.
    let requestBudget: ByteBudget?
    /// The server's budget for frames waiting for peers that read nothing; nil for clients.
    let unreadBudget: ByteBudget?
    /// The stream's event loop, if it has one (see `ByteStream.loop`).
    let loop: EventLoop?
    /// Where handler tasks run: the connection's loop when the server asked for it, else the global executor.
    let handlerExecutor: (any TaskExecutor)?
    /// The server's count of running handlers (`RPCServer.handlerCount`), from each task's creation to its end.
    let runningHandlers: RunningHandlers?

    init(
        stream: any ByteStream,
        role: ConnectionStateMachine.Role,
        settings: ConnectionSettings,
        timers: ConnectionTimers = ConnectionTimers(),
        handlersOnLoop: Bool = false,
        inboundBudget: ByteBudget? = nil,
        requestBudget: ByteBudget? = nil,
        unreadBudget: ByteBudget? = nil,
        handler: CallHandler?,
        refusalHandler: (@Sendable (WireV1.CallStart?, WireV1.Status) -> Void)? = nil,
        runningHandlers: RunningHandlers? = nil
    ) {
        self.refusalHandler = refusalHandler
        self.runningHandlers = runningHandlers
        self.inboundBudget = inboundBudget
        self.requestBudget = requestBudget
        self.unreadBudget = unreadBudget
        self.stream = stream
        self.loop = stream.loop
        self.handlerExecutor = handlersOnLoop ? stream.loop : nil
        self.timers = timers
        self.role = role
        self.handler = handler
        self.maximumInboundFrameSize = settings.maxFrameSize
        self.unreadOutboundLimit = settings.unreadOutboundLimit
        // The hello tells the peer how often to expect pings (a tap or a log shows it), unless set explicitly.
        var settings = settings
        if settings.keepaliveIntervalMilliseconds == 0, let interval = timers.keepaliveInterval {
            let (seconds, attoseconds) = interval.components
            let milliseconds = Double(seconds) * 1000 + Double(attoseconds) / 1e15
            settings.keepaliveIntervalMilliseconds = milliseconds >= Double(Int.max) ? Int.max : Int(milliseconds)
        }
        let machine = ConnectionStateMachine(role: role, settings: settings, agent: "tokenet/1")
        var core = Core(machine: machine, encoder: FrameEncoder())
        core.workFreeFrames = WorkFreeFrameAllowance(burst: settings.workFreeFrameBurst)
        self.core = Mutex(core)
        // The hello goes first in the outbound buffer, before any call the application opens.
        perform { $0.machine.start() }
    }

    /// Runs the connection until it closes: sends the hello, reads frames, writes frames.
    func run() async {
        let cancelHelloCheck = armHelloCheck()
        defer { cancelHelloCheck() }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.writeLoop() }
            // Cancelled as soon as reading ends, so a long keepalive interval never delays the close.
            let timer = timers.isEnabled ? Task { await self.timerLoop() } : nil
            if core.withLock({ $0.pushReceiving }) ?? startReceiving() {
                await self.readingHasEnded()
            } else {
                await self.readLoop()
            }
            timer?.cancel()
        }
        await stream.close()
        let (waiters, heldLargeBuffers) = core.withLock { core in
            core.finished = true
            releaseRequests(core.requestBytesHeld, core: &core)
            releaseUnreadCount(&core)
            // Its calls have ended with the connection; the armed check holds the connection until cancelled.
            core.deadlineCheck?.cancel()
            core.deadlineCheck = nil
            core.deadlines.removeAll()
            let waiters = core.closedWaiters
            core.closedWaiters.removeAll()
            wakeCapacityWaiters(&core)
            // Frames a peer never read (up to `unreadOutboundLimit`, in a buffer of up to twice that) are let go
            // now rather than with the connection object, so that the heap can be trimmed below.
            let held = core.outbound.capacity + core.spareOutbound.capacity
            core.outbound = []
            core.spareOutbound = []
            return (waiters, held >= Self.trimHeapAfterBytes || core.heldLargeBuffers)
        }
        for waiter in waiters { waiter.resume() }
        if heldLargeBuffers { Heap.trimSoon() }
    }

    /// Outbound buffers at least this large, let go when a connection ends, are worth giving back to the system
    /// (`Heap.trimSoon`): the connection of a peer that stopped reading, or of one that took a burst of large messages;
    /// so is as much held at once (`Core.heldLargeBuffers`): a peer that sent large requests without ending
    /// them, or large frames it never finished, left the node at its peak size after it had gone.
    static let trimHeapAfterBytes = 1 << 20

    /// Resets the stream if the connection has not finished `timers.stuckWriteGrace` after it began to close. Its last
    /// frames (a goaway, final statuses) wait behind a write that only the peer can complete by reading; a peer
    /// that stops reading (and perhaps sending) would otherwise hold the connection, and its memory, forever. The
    /// stream is reset (an orderly close would wait for the same peer): the write fails, which ends `run()`.
    func armStuckWriteClose() {
        // Weak: a connection that has ended and been let go needs no check.
        let check: @Sendable () -> Void = { [weak self] in
            guard let self, !core.withLock({ $0.finished }) else { return }
            Task { await stream.abort() }
        }
        if let loop {
            _ = loop.scheduleTimer(after: timers.stuckWriteGrace, check)
            return
        }
        Task { [timers] in
            try? await Task.sleep(for: timers.stuckWriteGrace)
            check()
        }
    }

    /// Why the connection ended, when that was a problem rather than a clean close (see `Core.problem`).
    var problem: String? { core.withLock { $0.problem } }

    /// Why the server refused the connection as one too many for this peer (goaway TOO_MANY_CONNECTIONS, right
    /// behind its hello); nil for any other connection.
    var refusedAsOneTooMany: String? {
        core.withLock { core in
            core.machine.peerGoAwayCode == .tooManyConnections ? core.problem ?? "too many connections" : nil
        }
    }

    /// The transport failed or ended: every open call ends with `reason`, which also becomes the connection's
    /// problem when `isProblem`. A plaintext client whose connection fails before the server's hello has nearly
    /// always reached a TLS port (the TLS side resets it), so the reason says so.
    func transportEnded(_ reason: String, isProblem: Bool, core: inout Core) {
        var reason = reason
        if isProblem && !core.machine.peerHelloReceived {
            reason +=
                role == .client && stream.peerIdentity == nil
                ? " before its hello (if the peer uses TLS, connect without --plaintext)" : " before its hello"
        }
        if isProblem && core.problem == nil { core.problem = reason }
        apply(core.machine.transportClosed(reason: reason), to: &core)
    }

    /// Arms the check that closes the connection when the peer's hello has not come within
    /// `timers.helloTimeout` (when set): on the loop's timers, or in a sleeping task for streams without a loop.
    /// Returns what cancels it.
    private func armHelloCheck() -> @Sendable () -> Void {
        guard let timeout = timers.helloTimeout else { return {} }
        let check: @Sendable () -> Void = { [self] in
            perform { $0.machine.helloTimedOut(after: "\(timeout)") }
        }
        if let loop {
            let timer = loop.scheduleTimer(after: timeout, check)
            return { loop.cancelTimer(timer) }
        }
        let task = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            check()
        }
        return { task.cancel() }
    }

    /// Whether the connection can still start calls.
    /// Whether the peer's hello has arrived (see `RPCClient.peerGreeted`).
    var peerGreeted: Bool { core.withLock { $0.machine.peerHelloReceived } }

    var isUsable: Bool {
        core.withLock { core in
            !core.closing && (core.machine.state == .active || core.machine.state == .awaitingHello)
        }
    }

    /// Waits until `run()` has finished.
    func waitUntilClosed() async {
        await withCheckedContinuation { continuation in
            let done = core.withLock { core in
                if core.finished { return true }
                core.closedWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: - Reading

    private func readLoop() async {
        var decoder = FrameDecoder(maximumFrameSize: maximumInboundFrameSize)
        var reason = "the peer closed the connection"
        var isProblem = false
        reading: while true {
            let chunk: [UInt8]?
            do {
                chunk = try await stream.read()
            } catch {
                reason = Self.readFailure(error)
                // A read that ends because this side closed (a node shutting down) is no problem with the peer.
                isProblem = (error as? TransportError) != .closedLocally
                if let failure = error as? TransportError { core.withLock { $0.transportFailure = failure } }
                break
            }
            guard let chunk else {
                if decoder.bufferedByteCount > 0 {
                    reason = "the peer closed the connection inside a frame"
                    isProblem = true
                } else {
                    // A peer that leaves before its hello never spoke Tokenet: worth reporting.
                    isProblem = core.withLock { !$0.machine.peerHelloReceived }
                }
                break
            }
            decoder.feed(chunk)
            noteReceived()
            while true {
                let frame: WireV1.Frame?
                do {
                    frame = try decoder.nextFrame()
                } catch let error as WireError {
                    if let id = error.streamID {
                        // A frame skipped for a value Tokenet cannot read: only its call is refused.
                        perform {
                            $0.machine.receiveUnreadable(
                                streamID: id, reason: error.message, code: Self.refusal(of: error),
                                opensCall: error.opensCall)
                        }
                        continue
                    }
                    perform { $0.machine.receiveUndecodable(error) }
                    reason = error.message
                    break reading
                } catch {
                    reason = "\(error)"
                    isProblem = true
                    break reading
                }
                guard let frame else { break }
                let stopped = core.withLock { core -> String? in
                    if let flood = endIfFlooding(frame, &core) { return flood }
                    apply(core.machine.receive(frame), to: &core)
                    wakeCapacityWaiters(&core)
                    return endIfPeerStoppedReading(&core)
                }
                if let stopped {
                    reason = stopped
                    isProblem = true
                    break reading
                }
            }
            if core.withLock({ $0.closing }) { break }
        }
        core.withLock { core in
            transportEnded(reason, isProblem: isProblem, core: &core)
            if !core.closing { armStuckWriteClose() }
            core.closing = true
            core.writer?.resume()
            core.writer = nil
            // Senders waiting for capacity, and a channel waiting for the hello, look again: nothing more comes.
            wakeCapacityWaiters(&core)
        }
    }

    // MARK: - Writing

    private func writeLoop() async {
        while let batch = await nextBatch() {
            let written = if let loop { await writeThroughLoop(batch, loop) } else { await write(batch) }
            guard written else { break }
        }
        await stream.close()
    }

    /// `write` for a stream with an event loop: the batch is handed to the loop, and once the stream has taken it
    /// the loop records so (`writeAccepted`), so that frames the loop itself encodes next — a pong — can leave
    /// without waiting for this task's next turn on the cooperative pool (`loopFlush` takes over). Until then
    /// `writing` stays set, as before: frames that tasks encode meanwhile (a server stream's messages) gather
    /// behind it and leave together, in fewer and larger writes than if the loop handed over at once.
    ///
    /// Awaited with nothing recorded, a process whose pool was busy for longer than its peer's keepalive timeout
    /// (20 s by default) lost its connections for pings its loop had read and answered at once.
    private func writeThroughLoop(_ batch: [UInt8], _ loop: EventLoop) async -> Bool {
        let generation = core.withLock { $0.writesBegun }
        let outcome: Result<Void, any Error>? = await withCheckedContinuation { continuation in
            let handed = loop.execute { [self] in
                stream.writeOnLoop(batch) { [self] result in
                    if case .success = result {
                        core.withLock { core in
                            core.writeAccepted = generation
                            if core.loopFlushDeferred, core.writing, core.writesBegun == generation {
                                core.loopFlushDeferred = false
                                scheduleLoopFlush(&core, loop)
                            }
                        }
                    }
                    continuation.resume(returning: result)
                }
            }
            if !handed { continuation.resume(returning: nil) }
        }
        switch outcome {
        case nil:
            // The loop has stopped: the stream's own write says how.
            return await write(batch)
        case .failure(let error):
            core.withLock { core in
                writeFailed(error, core: &core)
                core.writing = false
            }
            markClosing()
            return false
        case .success:
            core.withLock { core in
                // Unless the loop took over meanwhile and a write of its own is in progress.
                if core.writesBegun == generation { core.writing = false }
            }
            return true
        }
    }

    /// Writes one batch taken with `writing` set, then clears it; false when the stream failed.
    ///
    /// A caller's or handler's task writes with `fromCaller`: the batch holds whatever every call had queued, so its
    /// own cancellation (a handler whose deadline passed, a caller given up) must not withdraw it. Withdrawn, the
    /// frames of the other calls would be lost and the connection would have to end.
    private func write(_ batch: [UInt8], fromCaller: Bool = false) async -> Bool {
        do {
            if fromCaller {
                try await stream.writeIgnoringCancellation(batch)
            } else {
                try await stream.write(batch)
            }
        } catch {
            core.withLock { core in
                writeFailed(error, core: &core)
                // Cleared here too: when the failed write was a caller's (`flushNow`), the writer task would
                // otherwise wait for that write to hand over forever, and `run()` (with every `close()`) with it.
                core.writing = false
            }
            markClosing()
            return false
        }
        core.withLock { core in
            core.writing = false
            if !core.outbound.isEmpty || core.closing {
                core.writer?.resume()
                core.writer = nil
            }
        }
        return true
    }

    /// A write failed: the open calls end with its reason, except when the peer closed in order. The reader then
    /// still has the stream's last bytes to read and then its end, and those say how the connection ended (a
    /// server's goaway naming why it refused this client, or its close before a hello, which is a TLS port's answer
    /// to a plaintext client); ended by the write, the calls were told only "connection closed by peer" whenever the
    /// write met the close first. A write that meets this side's own close is part of a clean close (it can race a
    /// keepalive ping or a last status), not a problem; a reset or a broken pipe is one.
    func writeFailed(_ error: any Error, core: inout Core) {
        let transportError = error as? TransportError
        guard transportError != .closedByPeer else { return }
        transportEnded("write failed: \(error)", isProblem: transportError != .closedLocally, core: &core)
    }

    /// Wakes whoever writes next: the loop flush when on the stream's loop, else the writer task.
    func requestFlush(_ core: inout Core) {
        if let loop, loop.inEventLoop, !core.closing {
            scheduleLoopFlush(&core, loop)
        } else {
            core.writer?.resume()
            core.writer = nil
        }
    }

    /// Writes what the caller just encoded, from the caller's own task, when no other write is in progress: the
    /// frames of a unary call leave without waking the writer task, one thread hop less each way.
    ///
    /// Off the loop the batch is handed to the loop's write and not waited for. A caller that waited for the socket
    /// to take it was held, past its deadline, for as long as a peer that stopped reading read nothing; the batch
    /// holds `writing` until it is taken, so later frames still queue behind it, and senders wait for room
    /// (`waitForSendCapacity`, `waitForRoomToOpen`) instead of growing `outbound`.
    nonisolated(nonsending) func flushNow() async {
        if let loop, loop.inEventLoop {
            flushOnLoop(loop)
            return
        }
        let batch: [UInt8]? = core.withLock { core in
            guard !core.writing, !core.outbound.isEmpty, !core.closing else {
                // Someone else is writing; they hand over to the writer task when done.
                if !core.outbound.isEmpty, !core.writing {
                    core.writer?.resume()
                    core.writer = nil
                }
                return nil
            }
            core.writing = true
            var bytes: [UInt8] = []
            swap(&bytes, &core.outbound)
            releaseUnreadCount(&core)
            wakeCapacityWaiters(&core)
            return bytes
        }
        guard let batch else { return }
        if let loop, loop.execute({ [self] in writeOnLoop(batch) }) { return }
        _ = await write(batch, fromCaller: true)
    }

    /// Everything encoded since the last write, or nil once the connection is closing and all is written.
    private func nextBatch() async -> [UInt8]? {
        enum Step {
            case write([UInt8])
            case done
            case wait
        }
        while true {
            let step: Step = core.withLock { core in
                if core.writing { return .wait }
                if !core.outbound.isEmpty {
                    core.writing = true
                    var bytes: [UInt8] = []
                    swap(&bytes, &core.outbound)
                    releaseUnreadCount(&core)
                    wakeCapacityWaiters(&core)
                    return .write(bytes)
                }
                return core.closing ? .done : .wait
            }
            switch step {
            case .write(let bytes): return bytes
            case .done: return nil
            case .wait:
                await withCheckedContinuation { continuation in
                    core.withLock { core in
                        if (!core.outbound.isEmpty && !core.writing) || (core.closing && !core.writing) {
                            continuation.resume()
                        } else {
                            core.writer = continuation
                        }
                    }
                }
            }
        }
    }

    private func markClosing() {
        core.withLock { core in
            core.closing = true
            core.writer?.resume()
            core.writer = nil
        }
    }

    // MARK: - Actions

    /// Runs one state-machine event under the lock and carries out its actions.
    func perform(_ event: (inout Core) -> ConnectionStateMachine.Actions) {
        core.withLock { core in
            let actions = event(&core)
            apply(actions, to: &core)
            wakeCapacityWaiters(&core)
        }
    }

    func apply(_ actions: consuming ConnectionStateMachine.Actions, to core: inout Core) {
        for action in actions {
            switch action {
            case .write(let frame):
                do {
                    try core.appendFrame { encoder, outbound in try encoder.encode(frame, into: &outbound) }
                } catch {
                    // The state machine checked sizes against the peer's limit; only a NUL in a string gets here.
                    let failure = core.machine.receiveUndecodable(WireError(.unencodableValue, "\(error)"))
                    apply(failure, to: &core)
                }
                if !core.callerFlushes { requestFlush(&core) }
            case .startHandler(let id, let start):
                startHandler(id, start, core: &core)
            case .deliverMessage(let id, let data):
                // One lookup, in the table the connection's side keeps.
                if role == .server {
                    guard holdRequest(id, byteCount: data.count, core: &core) else { continue }
                    core.serverCalls.update(id) { $0.requests.yield(data) }
                } else {
                    core.clientCalls.update(id) { $0.responses.yield(data) }
                }
            case .deliverEndOfRequests(let id):
                core.serverCalls.update(id) { $0.requests.finish() }
                releaseRequests(of: id, core: &core)
            case .finishCall(let id, let status):
                guard let call = core.clientCalls.removeValue(forKey: id) else { continue }
                call.onTrailers?(Metadata(wire: status.trailers))
                if status.code == .ok {
                    call.responses.finish()
                } else {
                    call.responses.finish(throwing: RPCError(status: status))
                }
            case .failCall(let id, let code, let message):
                core.clientCalls.removeValue(forKey: id)?.responses.finish(
                    throwing: RPCError(code, message, cause: ConnectionEnded()))
            case .refuseCall(let id, let message, let peerIsStopping):
                core.clientCalls.removeValue(forKey: id)?.responses.finish(
                    throwing: RPCError(.unavailable, message, cause: CallNotProcessed(peerIsStopping: peerIsStopping)))
            case .cancelHandler(let id):
                if let call = core.serverCalls.removeValue(forKey: id) {
                    releaseRequests(call.heldRequestBytes, core: &core)
                    // Requests end with the error first: cancelling the task first would end them cleanly (the
                    // queue's cancellation handler), and a handler still waiting for its half-close would go on to
                    // run with the request as if the call were whole.
                    call.requests.finish(throwing: CancellationError())
                    call.task?.cancel()
                }
            case .refusedCall(_, let start, let status):
                refusalHandler?(start, status)
            case .pongReceived(let payload):
                if core.outstandingPing?.payload == payload { core.outstandingPing = nil }
            case .closeConnection(let error):
                if !core.closing { armStuckWriteClose() }
                core.closing = true
                if core.problem == nil { core.problem = error }
                core.writer?.resume()
                core.writer = nil
            }
        }
    }

    private func startHandler(_ id: UInt32, _ start: WireV1.CallStart, core: inout Core) {
        guard let handler else { return }
        let requests = MessageQueue()
        let timeout = start.timeoutMicros.map { Duration.microseconds(Int64(clamping: $0)) }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let call = ServerCall(
            connection: self,
            streamID: id,
            method: start.method,
            metadata: Metadata(wire: start.metadata),
            deadline: deadline,
            peer: stream.peerIdentity,
            requests: requests
        )
        // The task cannot see the call table before it is entered: everything it does on the connection takes
        // the lock this runs under.
        // Counted from here, not from the task's first line: a task made just before its connection closed, and not
        // yet run, must hold back a node that waits for its handlers before closing its database.
        let running = runningHandlers
        running?.started()
        let task = Task(executorPreference: handlerExecutor) {
            defer { running?.ended() }
            await handler(call)
        }
        core.serverCalls[id] = ServerCallState(requests: requests, task: task)
        if let timeout, let deadline { trackDeadline(id, at: deadline, timeout: timeout, core: &core) }
    }

    // MARK: - Server calls

    /// Server: sends a response message. Returns false when the call is over (cancelled or finished).
    @discardableResult
    func sendResponse(_ id: UInt32, _ data: Data) -> Bool {
        core.withLock { core in
            guard core.serverCalls.contains(id) else { return false }
            apply(core.machine.sendMessage(id, data), to: &core)
            return core.serverCalls.contains(id)
        }
    }

    /// Server: whether a message of `byteCount` bytes would leave on call `id` now, without waiting for the client's
    /// window or for the outbound buffer to drain.
    func hasRoom(_ id: UInt32, forBytes byteCount: Int) -> Bool {
        core.withLock { core in
            guard let allowance = core.machine.directSendAllowance(id) else { return false }
            return byteCount <= allowance && core.outbound.count <= Self.outboundHighWater
        }
    }

    /// Server: ends a call with its status, written from the caller's task (`flushNow`). Returns the status the
    /// caller was told: `status`, or the one this side sent when it ended the call before the handler returned (a
    /// stream error, the end of a drain), or `status` for a call the caller ended itself.
    @discardableResult
    nonisolated(nonsending) func finishServerCall(_ id: UInt32, _ status: WireV1.Status) async -> WireV1.Status {
        let told: WireV1.Status? = core.withLock { core in
            guard let call = core.serverCalls.removeValue(forKey: id) else {
                // The call ended before its handler returned (cancelled, say): its slot is free only now.
                return core.machine.handlerReturned(id)
            }
            releaseRequests(call.heldRequestBytes, core: &core)
            core.callerFlushes = true
            apply(core.machine.sendStatus(id, status), to: &core)
            core.callerFlushes = false
            return nil
        }
        await flushNow()
        return told ?? status
    }

    /// A message to send: serialized already, or a generated message in protobuf-c form
    /// (`ProtoMessage.withPackable`) to pack straight into its frame. Used synchronously, under the lock.
    enum OutgoingMessage {
        case serialized(Data)
        case packable(PackableMessage)
    }

    /// Server: encodes the one response of a unary or client-streaming call without waking the writer: the status
    /// follows at once and both leave in one write.
    func sendFinalResponse(_ id: UInt32, _ response: OutgoingMessage) throws -> Bool {
        try core.withLock { core in
            guard core.serverCalls.contains(id) else { return false }
            core.callerFlushes = true
            defer { core.callerFlushes = false }
            try send(response, on: id, core: &core)
            return core.serverCalls.contains(id)
        }
    }

    /// Writes a message frame on `id`. A generated message that the call's window admits now is packed straight
    /// into the outbound buffer (`FrameEncoder.encodeMessage`); anything else goes through the state machine as
    /// serialized data, to be queued for window or refused as the rules say.
    private func send(_ outgoing: OutgoingMessage, on id: UInt32, core: inout Core) throws {
        let data: Data
        switch outgoing {
        case .serialized(let serialized):
            data = serialized
        case .packable(let message):
            if let allowance = core.machine.directSendAllowance(id),
                let count = try core.appendFrame({ encoder, outbound in
                    try encoder.encodeMessage(streamID: id, message, maxDataSize: allowance, into: &outbound)
                })
            {
                core.machine.sentDirectly(id, byteCount: count)
                if !core.callerFlushes { requestFlush(&core) }
                return
            }
            data = message.serializedData()
        }
        apply(core.machine.sendMessage(id, data), to: &core)
    }

    /// The application consumed a received message: let the flow-control window reopen.
    func consumed(_ id: UInt32, byteCount: Int, moreExpected: Bool = true) {
        perform { core in
            // A message taken off a stream of requests is the handler's to keep; the one request of a unary or
            // server-streaming call stays counted until the half-close lets its handler run.
            if moreExpected, requestBudget != nil {
                releaseRequests(of: id, upTo: FrameFastPath.heldByteBound(ofMessage: byteCount), core: &core)
            }
            return core.machine.consumed(id, byteCount: byteCount, moreExpected: moreExpected)
        }
    }

    // MARK: - Client calls

    /// Client: opens a call and returns its id and the stream of response messages.
    ///
    /// With `onlyRequest` the call also sends that message and ends its requests under the same lock (unary and
    /// server-streaming calls), so the three frames are encoded together and leave in one write.
    func openCall(
        method: String,
        metadata: Metadata,
        timeout: Duration?,
        onlyRequest: OutgoingMessage? = nil,
        callerFlushes: Bool = false,
        unlessFull: Bool = false,
        onTrailers: (@Sendable (Metadata) -> Void)? = nil
    ) throws(RPCError) -> (UInt32, MessageQueue) {
        let responses = MessageQueue()
        var start = WireV1.CallStart(method: method, metadata: metadata.wire)
        // The deadline kept here is the one the server is told, in whole microseconds.
        let micros = timeout.map(Self.wireMicroseconds)
        let timeout = micros.map { Duration.microseconds($0) }
        if let micros { start.timeoutMicros = UInt64(micros) }
        let result: Result<UInt32, RPCError> = core.withLock { core in
            if core.closing {
                // Why it closed, when it closed on a problem: a plaintext client whose connection a TLS port reset
                // before the call was opened gets the same hint as one whose call was in flight.
                let why = core.problem.map { ": \($0)" } ?? ""
                // Nothing left: the caller may send it again elsewhere, whatever it asks (a node closes its
                // connections as it stops, and a command that only heard "closed" could not tell what was done).
                return .failure(
                    RPCError(
                        .unavailable, "\(RPCError.closedBeforeSent)\(why)",
                        cause: NotConnected(reason: RPCError.closedBeforeSent, connectionWasClosing: true)))
            }
            if unlessFull, core.outbound.count > Self.outboundHighWater {
                return .failure(RPCError(.resourceExhausted, NoRoomToOpen.reason, cause: NoRoomToOpen()))
            }
            do {
                let (id, actions) = try core.machine.openCall(start)
                core.clientCalls[id] = ClientCallState(responses: responses, onTrailers: onTrailers)
                if let timeout { trackDeadline(id, at: .now + timeout, timeout: timeout, core: &core) }
                // A caller that will `flushNow` right after does not need the writer task woken.
                core.callerFlushes = callerFlushes
                defer { core.callerFlushes = false }
                apply(actions, to: &core)
                if let onlyRequest {
                    try send(onlyRequest, on: id, core: &core)
                    apply(core.machine.sendEndOfRequests(id), to: &core)
                }
                return .success(id)
            } catch let error as RPCError {
                return .failure(error)
            } catch {
                return .failure(RPCError(.internal, "\(error)"))
            }
        }
        return (try result.get(), responses)
    }

    /// A timeout in whole microseconds for the wire: at least 1, and at most `Int64.max` (some 292,000 years)
    /// however long the `Duration`, so a caller's "forever" never overflows.
    static func wireMicroseconds(_ timeout: Duration) -> Int64 {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0 else { return 1 }
        guard seconds < Int64.max / 1_000_000 else { return Int64.max }
        return max(seconds * 1_000_000 + attoseconds / 1_000_000_000_000, 1)
    }

    /// Sends a request on client call `id`; false, sending nothing, when the call is no longer open here (answered
    /// with its status, cancelled or failed). One lock for both: it is taken for every request of a stream.
    @discardableResult
    func sendRequest(_ id: UInt32, _ data: Data) -> Bool {
        var open = false
        perform { core in
            open = core.clientCalls[id] != nil
            return open ? core.machine.sendMessage(id, data) : []
        }
        return open
    }

    func endRequests(_ id: UInt32) {
        perform { $0.machine.sendEndOfRequests(id) }
    }

    /// Client: abandons a call; its response stream ends with `code`.
    func cancelCall(_ id: UInt32, code: StatusCode = .cancelled, reason: String) {
        core.withLock { core in cancelClientCall(id, code: code, reason: reason, core: &core) }
    }

    /// `cancelCall` for a task cancellation handler, which never waits for `core`.
    ///
    /// Why: the runtime runs cancellation handlers while it holds the cancelled task's status lock, and resuming a
    /// task's continuation takes that same lock. A thread holding `core` may be resuming the cancelled task at
    /// that moment (a response, or the connection's end, finishing its queue), so a handler that waited for
    /// `core` would deadlock with it; a stopping node once hung that way for good. When `core` is busy the cancel
    /// is made from the loop, or a new task, an instant later.
    func cancelCallWhenCancelled(_ id: UInt32, reason: String) {
        // nil when another thread held the lock.
        let cancelledHere: Bool? = core.withLockIfAvailable { core in
            cancelClientCall(id, code: .cancelled, reason: reason, core: &core)
            return true
        }
        guard cancelledHere == nil else { return }
        if let loop, loop.execute({ self.cancelCall(id, reason: reason) }) { return }
        Task { self.cancelCall(id, reason: reason) }
    }

    func cancelClientCall(_ id: UInt32, code: StatusCode, reason: String, core: inout Core) {
        guard let call = core.clientCalls.removeValue(forKey: id) else { return }
        apply(core.machine.cancelCall(id, reason: reason), to: &core)
        call.responses.finish(throwing: RPCError(code, reason))
    }
}
