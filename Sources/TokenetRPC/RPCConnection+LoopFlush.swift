import TokenetTransport

/// Writing from the stream's own event loop. Frames encoded on the loop thread — by tasks running on the loop
/// executor or while handling received frames — are flushed by one closure queued on the loop. It runs after the
/// work already queued, typically the other calls resumed by the same read, so all their frames leave in one engine
/// write (one TLS record up to 16 KiB) and one `send`: no writer task to wake, no thread hop.
extension RPCConnection {
    /// The largest written batch kept for reuse.
    static let spareOutboundCapacityCap = 256 * 1024

    /// Queues the loop flush unless one is queued already.
    func scheduleLoopFlush(_ core: inout Core, _ loop: EventLoop) {
        guard !core.loopFlushScheduled else { return }
        core.loopFlushScheduled = true
        if !loop.execute({ [self] in self.loopFlush() }) {
            // The loop stopped: leave the rest to the writer task, which fails or closes.
            core.loopFlushScheduled = false
            core.writer?.resume()
            core.writer = nil
        }
    }

    /// Frames waiting past this many bytes — and at least `earlyFlushFrames` of them — leave at once instead of at
    /// the end of the loop iteration.
    ///
    /// Without it, a burst (64 calls resumed by one read, or 64 handlers started by one read) leaves as one write at
    /// the end of the iteration, and the peer sits idle until then: the two ends take turns instead of working in
    /// parallel, and 64 calls in flight used each CPU only half of the time. Writing every ~2 KiB (about a dozen
    /// small calls) lets the peer start on the first calls while this end encodes the rest; measured on two CPUs
    /// it doubled the rate with 64 calls in flight (40k to 79k calls/s). When both ends share one CPU the extra
    /// writes cost about 13 % of that rate, so they are skipped while the peer shares this end's CPU (a loopback
    /// peer that last sent from it: `ByteStream.peerSharesCPU`).
    static let earlyFlushBytes = 2048
    /// With large messages 2 KiB is a single frame, and writing every message on its own costs a TLS write and a
    /// `send` each; a dozen small calls are two dozen frames or more, so counting frames leaves them unchanged.
    static let earlyFlushFrames = 24
    /// Large messages leave in batches of about this size (four 16 KiB messages): the peer still starts early,
    /// and each `send` carries 64 KiB, the loopback segment size. Measured against writing every 16 KiB message on
    /// its own (alternating runs, split CPUs): 4–15 % less CPU per message in 7 of 8 pairs.
    static let earlyFlushLargeBytes = 64 * 1024

    /// On the loop, after a caller encoded its frames: writes now when enough has accumulated or when nothing else
    /// is queued on the loop (no other call could add frames to this batch before it leaves; writing at once
    /// sends a lone call's frames before its task winds down instead of after), else queues the loop flush.
    func flushOnLoop(_ loop: EventLoop) {
        let idle = !loop.hasQueuedWork
        let now = core.withLock { core -> Bool in
            guard !core.outbound.isEmpty else { return false }
            var early = core.outbound.count >= Self.earlyFlushLargeBytes
            if !early, !core.outboundWhole, core.outbound.count >= Self.earlyFlushBytes,
                core.outboundFrames >= Self.earlyFlushFrames
            {
                // Asked once per batch (it reads the clock): the answer stands until the batch is written.
                if stream.peerSharesCPU() { core.outboundWhole = true } else { early = true }
            }
            if idle || early, !core.writing, !core.closing { return true }
            requestFlush(&core)
            return false
        }
        if now { loopFlush(scheduled: false) }
    }

    /// Hands everything encoded so far to the stream without suspending. Runs on the loop.
    private func loopFlush(scheduled: Bool = true) {
        let batch: [UInt8]? = core.withLock { core in
            if scheduled { core.loopFlushScheduled = false }
            // The writer task's write is over but for that task's bookkeeping, which waits for a turn on the pool:
            // the loop takes over, so that what it encoded (a pong) does not wait for the pool.
            if core.writing, core.writeAccepted == core.writesBegun, !core.closing { core.writing = false }
            guard !core.writing, !core.outbound.isEmpty, !core.closing else {
                // A write in progress hands over when it completes (the writer task's, once the stream took it:
                // `writeThroughLoop`); a closing connection is the writer task's.
                if core.writing && !core.closing && !core.outbound.isEmpty { core.loopFlushDeferred = true }
                if core.closing {
                    core.writer?.resume()
                    core.writer = nil
                }
                return nil
            }
            core.loopFlushDeferred = false
            core.writing = true
            // The spare is only referenced here by now (the stream let go of it when its write completed), so
            // emptying it keeps its capacity without allocating.
            var bytes: [UInt8] = []
            swap(&bytes, &core.spareOutbound)
            bytes.removeAll(keepingCapacity: true)
            swap(&bytes, &core.outbound)
            releaseUnreadCount(&core)
            wakeCapacityWaiters(&core)
            return bytes
        }
        guard let batch else { return }
        writeOnLoop(batch)
    }

    /// Hands `batch`, taken with `writing` set, to the stream; its completion clears `writing` and hands over to
    /// whoever writes next. Runs on the loop, not under the lock: a failing write reports to `received`
    /// synchronously, which takes it.
    func writeOnLoop(_ batch: [UInt8]) {
        stream.writeOnLoop(batch) { [self] result in
            switch result {
            case .success:
                core.withLock { core in
                    // A spare above the cap would hold memory on an idle connection long after a burst.
                    if batch.capacity <= Self.spareOutboundCapacityCap { core.spareOutbound = batch }
                    core.writing = false
                    if !core.outbound.isEmpty || core.closing { requestFlush(&core) }
                }
            case .failure(let error):
                core.withLock { core in
                    writeFailed(error, core: &core)
                    core.writing = false
                    core.closing = true
                    core.writer?.resume()
                    core.writer = nil
                }
            }
        }
    }
}
