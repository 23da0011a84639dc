import TokenetTransport
import TokenetWire

/// Push-mode reading: when the stream can hand received bytes over on its event-loop thread (TLS and plaintext
/// connections can), frames are decoded and fed to the state machine right there, under one lock per chunk, and the
/// waiting call or handler is woken directly — no reader task is woken in between, one thread hop less per message.
/// Streams that cannot (the in-memory pipe) use the pull loop in `readLoop()`.
extension RPCConnection {
    /// Starts push-mode reading if the stream supports it.
    func startReceiving() -> Bool {
        core.withLock { $0.decoder = FrameDecoder(maximumFrameSize: maximumInboundFrameSize) }
        return stream.receive { [self] result in self.received(result) }
    }

    /// Starts push-mode reading now rather than when `run()` gets a thread (see `RPCClient.init`). Frames read
    /// meanwhile are handled as `run()` would handle them: a pong leaves from the loop (`scheduleLoopFlush`), and
    /// the end of the stream closes the connection, which `run()` then finds ended.
    func startReceivingEarly() {
        let push = startReceiving()
        core.withLock { $0.pushReceiving = push }
    }

    /// Returns once push-mode reading has ended (end of stream, error, or the connection closing).
    func readingHasEnded() async {
        await withCheckedContinuation { continuation in
            core.withLock { core in
                if core.readingDone {
                    continuation.resume()
                } else {
                    core.readingEnded = continuation
                }
            }
        }
    }

    private func received(_ result: Result<[UInt8]?, any Error>) {
        core.withLock { core in
            // Moved out, not copied: a second reference to its buffer would make every change to it a copy.
            guard !core.readingDone, var decoder = core.decoder.take() else { return }
            defer { if !core.readingDone { core.decoder = decoder } }
            switch result {
            case .success(let chunk?):
                decoder.feed(chunk)
                core.lastReceived = .now
                if core.machine.hasOpenCalls { core.lastCallActivity = .now }
                var framesRead = 0
                defer { notePartialFrame(decoder, framesRead: framesRead, core: &core) }
                while true {
                    let frame: WireV1.Frame?
                    do {
                        frame = try decoder.nextFrame()
                    } catch let error as WireError {
                        if let id = error.streamID {
                            // A frame skipped for a value Tokenet cannot read: only its call is refused.
                            apply(
                                core.machine.receiveUnreadable(
                                    streamID: id, reason: error.message, code: Self.refusal(of: error),
                                    opensCall: error.opensCall),
                                to: &core)
                            continue
                        }
                        apply(core.machine.receiveUndecodable(error), to: &core)
                        endReading(&core, reason: error.message)
                        return
                    } catch {
                        endReading(&core, reason: "\(error)", isProblem: true)
                        return
                    }
                    guard let frame else { break }
                    framesRead += 1
                    if let flood = endIfFlooding(frame, &core) {
                        endReading(&core, reason: flood, isProblem: true)
                        return
                    }
                    apply(core.machine.receive(frame), to: &core)
                    if let stopped = endIfPeerStoppedReading(&core) {
                        endReading(&core, reason: stopped, isProblem: true)
                        return
                    }
                }
                if let budget = inboundBudget {
                    let held = decoder.bufferedByteCount
                    let within = budget.adjust(by: held - core.budgeted)
                    core.budgeted = held
                    // Only a large frame is refused: a call's usual frames are small, and a connection caught
                    // between two of them must not pay for the peers that hold megabytes.
                    if !within && held > ByteBudget.largeFrame {
                        apply(core.machine.inboundBudgetExceeded(heldBytes: held, limit: budget.limit), to: &core)
                        endReading(&core, reason: "over the budget of unfinished frames", isProblem: true)
                        return
                    }
                }
                wakeCapacityWaiters(&core)
                if core.closing { endReading(&core, reason: "the connection is closing") }
            case .success(nil):
                let insideFrame = decoder.bufferedByteCount > 0
                endReading(
                    &core,
                    reason: insideFrame
                        ? "the peer closed the connection inside a frame" : "the peer closed the connection",
                    // A peer that leaves before its hello never spoke Tokenet: worth reporting, not a clean close.
                    isProblem: insideFrame || !core.machine.peerHelloReceived
                )
            case .failure(let error):
                // A read that ends because this side closed (a node shutting down) is no problem with the peer.
                let local = (error as? TransportError) == .closedLocally
                core.transportFailure = error as? TransportError
                endReading(&core, reason: Self.readFailure(error), isProblem: !local)
            }
        }
    }

    /// Why reading ended, for an error the stream's read threw: a failed system call names itself ("read
    /// failed: Connection reset by peer", or "send failed: …" when a write failed first), so it is not named twice.
    static func readFailure(_ error: any Error) -> String {
        (error as? TransportError)?.code == .io ? "\(error)" : "read failed: \(error)"
    }

    /// The status a server refuses a skipped frame's call with.
    static func refusal(of error: WireError) -> StatusCode {
        error.code == .callStartTooLarge ? .resourceExhausted : .invalidArgument
    }

    /// Starts the clock of a frame that began to arrive (see `ConnectionTimers.frameTimeout`), or stops it: the
    /// clock runs from the first chunk of a frame and only a whole frame stops it, so a peer that trickles bytes
    /// without finishing a frame runs out of time, while a busy connection, which ends a frame in most chunks and
    /// begins the next, does not.
    func notePartialFrame(_ decoder: FrameDecoder, framesRead: Int, core: inout Core) {
        if decoder.bufferedByteCount == 0 {
            core.frameStartedAt = nil
            return
        }
        if framesRead > 0 || core.frameStartedAt == nil { core.frameStartedAt = .now }
        if decoder.bufferedByteCount >= Self.trimHeapAfterBytes { core.heldLargeBuffers = true }
    }

    /// Reading is over: every open call ends, the writer flushes what is left and closes, `run()` returns.
    private func endReading(_ core: inout Core, reason: String, isProblem: Bool = false) {
        _ = inboundBudget?.adjust(by: -core.budgeted)
        core.budgeted = 0
        core.readingDone = true
        core.decoder = nil
        transportEnded(reason, isProblem: isProblem, core: &core)
        if !core.closing { armStuckWriteClose() }
        core.closing = true
        wakeCapacityWaiters(&core)
        core.writer?.resume()
        core.writer = nil
        core.readingEnded?.resume()
        core.readingEnded = nil
    }
}
