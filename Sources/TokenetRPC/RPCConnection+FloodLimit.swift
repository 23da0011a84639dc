import TokenetWire

extension RPCConnection {
    /// Ends the connection when `frame` is one more frame that does no work than the peer's allowance holds
    /// (`WorkFreeFrameAllowance`); returns why, or nil for any other frame. The clock is read for such frames only:
    /// the frames of calls never pay for it.
    func endIfFlooding(_ frame: WireV1.Frame, _ core: inout Core) -> String? {
        guard WorkFreeFrameAllowance.isWorkFree(frame), !core.workFreeFrames.take() else { return nil }
        apply(core.machine.workFreeFramesExceeded(limit: core.workFreeFrames.description), to: &core)
        return "the peer floods frames that do no work (more than \(core.workFreeFrames.description))"
    }
}
