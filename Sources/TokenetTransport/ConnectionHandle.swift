/// The async face of a `ConnectionDriver`, shared by `TLSConnection` and `PlainConnection`: each request hops to the
/// loop and suspends until the driver resumes it, and a cancelled task withdraws its request there. A task already
/// running on the loop (see `EventLoop+TaskExecutor.swift`) calls the driver directly: no hop, and usually no
/// suspension, since the driver resumes before the continuation is awaited.
struct ConnectionHandle: Sendable {
    let driver: LoopBound<ConnectionDriver>
    var loop: EventLoop { driver.loop }

    func read() async throws -> [UInt8]? {
        let (driver, loop, token) = (driver, loop, RequestToken())
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if loop.inEventLoop {
                    driver.value.read(token, continuation)
                } else if !loop.execute({ driver.value.read(token, continuation) }) {
                    continuation.resume(throwing: Self.stopped(loop))
                }
            }
        } onCancel: {
            token.cancel()
            loop.execute { driver.value.cancelRead(token) }
        }
    }

    func write(_ bytes: [UInt8]) async throws {
        let (driver, loop, token) = (driver, loop, RequestToken())
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if loop.inEventLoop {
                    driver.value.write(bytes, token, continuation)
                } else if !loop.execute({ driver.value.write(bytes, token, continuation) }) {
                    continuation.resume(throwing: Self.stopped(loop))
                }
            }
        } onCancel: {
            token.cancel()
            loop.execute { driver.value.cancelWrite(token) }
        }
    }

    /// `write` that the calling task's cancellation does not withdraw: for bytes that other tasks' frames share.
    func writeIgnoringCancellation(_ bytes: [UInt8]) async throws {
        let (driver, loop) = (driver, loop)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let write: @Sendable () -> Void = { driver.value.write(bytes, nil) { continuation.resume(with: $0) } }
            if loop.inEventLoop {
                write()
            } else if !loop.execute(write) {
                continuation.resume(throwing: Self.stopped(loop))
            }
        }
    }

    /// On the loop thread only: queues `bytes` without suspending; `completion` runs on the loop once they are
    /// accepted (usually before this returns) or failed.
    func writeOnLoop(_ bytes: [UInt8], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        driver.value.write(bytes, nil, completion: completion)
    }

    /// On the loop thread only: see `PeerPlacement`.
    func peerSharesCPU() -> Bool {
        driver.value.peerSharesCPU()
    }

    /// Push mode: see `ConnectionDriver.receive`. Returns false when the loop has stopped.
    func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) -> Bool {
        let driver = driver
        return loop.execute { driver.value.receive(handler) }
    }

    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let driver = driver
            if !loop.execute({ driver.value.close(continuation) }) { continuation.resume() }
        }
    }

    /// Ends this side's stream (see `ConnectionDriver.shutdownWrite`) and returns once it is sent or closed.
    func shutdownWrite() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let driver = driver
            if !loop.execute({ driver.value.shutdownWrite(continuation) }) { continuation.resume() }
        }
    }

    /// Resets the connection (see `ConnectionDriver.abort`) and returns once it is closed.
    func abort(_ reason: TransportError) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let driver = driver
            if !loop.execute({
                driver.value.abort(reason)
                continuation.resume()
            }) {
                continuation.resume()
            }
        }
    }

    /// Starts closing without waiting (for `deinit`).
    func closeSoon() {
        let driver = driver
        loop.execute { driver.value.close(nil) }
    }

    func bufferState() async -> ConnectionBufferState {
        await withCheckedContinuation { continuation in
            let driver = driver
            let submitted = loop.execute {
                let value = driver.value
                continuation.resume(
                    returning: ConnectionBufferState(
                        outboundBuffered: value.outboundBuffered, peakOutboundBuffered: value.peakOutboundBuffered,
                        hasWaitingWriter: value.hasWaitingWriter))
            }
            if !submitted {
                continuation.resume(
                    returning: ConnectionBufferState(
                        outboundBuffered: 0, peakOutboundBuffered: 0, hasWaitingWriter: false))
            }
        }
    }

    static func stopped(_ loop: EventLoop) -> TransportError {
        TransportError(.eventLoopStopped, "event loop \(loop.name) stopped")
    }
}

/// Buffering figures, for tests and diagnostics.
struct ConnectionBufferState: Sendable {
    var outboundBuffered: Int
    var peakOutboundBuffered: Int
    var hasWaitingWriter: Bool
}
