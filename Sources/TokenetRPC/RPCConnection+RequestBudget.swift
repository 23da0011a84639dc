import TokenetWire

/// The requests a server holds for calls whose requests have not ended, bounded across all its connections.
///
/// A unary or server-streaming call runs its handler only once the client half-closes, and holds its request until
/// then; a client that never half-closes holds it for good. Each connection may keep `max_concurrent_streams` such
/// calls, each with a request as large as the stream window (100 calls of 1 MiB), so a few peers that send requests
/// without their half-close would hold gigabytes. A request counts from its arrival until the half-close, the end of
/// its call, or, on a stream of requests, until the handler takes it. Past the server's budget, a call whose
/// connection holds more than `ByteBudget.largeFrame` of such requests is refused RESOURCE_EXHAUSTED instead of
/// given its next message; connections with small requests carry on. A request counts as the memory it may keep
/// alive (`FrameFastPath.heldByteBound`), up to twice its size: counted by its size, the budget of 256 MiB held some
/// 512 MiB (a server holding 100 MB of 1 MB requests grew by 234 MB).
extension RPCConnection {
    /// Server: counts a message of `messageBytes` bytes that arrived for call `id`, as the memory it may keep alive.
    /// False when the budget is spent and this connection holds a large share of it: the call has then ended
    /// RESOURCE_EXHAUSTED and the message is dropped.
    func holdRequest(_ id: UInt32, byteCount messageBytes: Int, core: inout Core) -> Bool {
        let byteCount = FrameFastPath.heldByteBound(ofMessage: messageBytes)
        guard let budget = requestBudget, byteCount > 0,
            core.serverCalls.update(id, { $0.heldRequestBytes += byteCount }) != nil
        else { return true }
        let within = budget.adjust(by: byteCount)
        core.requestBytesHeld += byteCount
        if core.requestBytesHeld >= Self.trimHeapAfterBytes { core.heldLargeBuffers = true }
        guard !within, core.requestBytesHeld > ByteBudget.largeFrame else { return true }
        let status = WireV1.Status(
            code: .resourceExhausted,
            message: "the node holds more than \(budget.limit) bytes of requests from calls that have not ended their "
                + "requests (\(core.requestBytesHeld) bytes from this connection); send each call's half_close with "
                + "its request, or retry later")
        // Ending the call releases what it held, this message's bytes among them.
        apply(core.machine.endCall(id, status), to: &core)
        return false
    }

    /// Server: what call `id` holds, or at most `limit` bytes of it, no longer counts.
    func releaseRequests(of id: UInt32, upTo limit: Int = .max, core: inout Core) {
        guard let held = core.serverCalls[id]?.heldRequestBytes, held > 0 else { return }
        let released = min(held, limit)
        core.serverCalls.update(id) { $0.heldRequestBytes -= released }
        releaseRequests(released, core: &core)
    }

    /// Server: `byteCount` bytes counted for this connection no longer count. Never more than the connection counted:
    /// the end of the connection releases all it holds, and a handler that finishes after it releases nothing more.
    func releaseRequests(_ byteCount: Int, core: inout Core) {
        let released = min(byteCount, core.requestBytesHeld)
        guard let budget = requestBudget, released > 0 else { return }
        _ = budget.adjust(by: -released)
        core.requestBytesHeld -= released
    }
}
