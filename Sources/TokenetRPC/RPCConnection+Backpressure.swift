extension RPCConnection {
    /// Bytes of encoded frames the connection holds for the socket before senders must wait.
    static let outboundHighWater = 1 << 20

    /// Returns once the call's queued messages fit in its flow-control window and the connection's outbound buffer
    /// is below its high-water mark, or once the call or the connection is over.
    func waitForSendCapacity(_ id: UInt32) async {
        while true {
            let mustWait = core.withLock { core in
                !core.closing && core.machine.streams.contains(id)
                    && (core.machine.pendingBytes(id) > 0 || core.outbound.count > Self.outboundHighWater)
            }
            guard mustWait else { return }
            await withCheckedContinuation { continuation in
                core.withLock { core in
                    let stillFull =
                        !core.closing && core.machine.streams.contains(id)
                        && (core.machine.pendingBytes(id) > 0 || core.outbound.count > Self.outboundHighWater)
                    if stillFull {
                        core.capacityWaiters.append(continuation)
                    } else {
                        continuation.resume()
                    }
                }
            }
        }
    }

    /// Lets waiting senders check again; called whenever window opens or the outbound buffer drains.
    func wakeCapacityWaiters(_ core: inout Core) {
        guard !core.capacityWaiters.isEmpty else { return }
        let waiters = core.capacityWaiters
        core.capacityWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }
}
