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

    /// Hands everything encoded so far to the stream without suspending. Runs on the loop.
    private func loopFlush() {
        let batch: [UInt8]? = core.withLock { core in
            core.loopFlushScheduled = false
            guard !core.writing, !core.outbound.isEmpty, !core.closing else {
                // A write in progress hands over when it completes; a closing connection is the writer task's.
                if core.closing {
                    core.writer?.resume()
                    core.writer = nil
                }
                return nil
            }
            core.writing = true
            // The spare is only referenced here by now (the stream let go of it when its write completed), so
            // emptying it keeps its capacity without allocating.
            var bytes: [UInt8] = []
            swap(&bytes, &core.spareOutbound)
            bytes.removeAll(keepingCapacity: true)
            swap(&bytes, &core.outbound)
            wakeCapacityWaiters(&core)
            return bytes
        }
        guard let batch else { return }
        // Not under the lock: a failing write reports to `received` synchronously, which takes it.
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
                perform { $0.machine.transportClosed(reason: "write failed: \(error)") }
                core.withLock { core in
                    core.writing = false
                    core.closing = true
                    core.writer?.resume()
                    core.writer = nil
                }
            }
        }
    }
}
