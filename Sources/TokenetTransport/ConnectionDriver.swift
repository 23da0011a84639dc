import CTokenetShims
import Synchronization

/// Drives one connection on its event loop: moves bytes between the socket and its engine (`TLSEngine`, or
/// `PassThroughEngine` for plaintext), feeds the outcomes to `ConnectionStateMachine`, and carries out the actions
/// it returns. Lives on the loop thread only.
final class ConnectionDriver: EventLoopHandler {
    /// Called once: with the engine's peer (nil without authentication) when established, or with the failure.
    typealias EstablishedHandler = (Result<PeerIdentity?, TransportError>) -> Void

    /// Told once, on the loop, that a write was accepted (`.success`) or failed.
    typealias WriteCompletion = (Result<Void, any Error>) -> Void

    private struct Writer {
        var bytes: [UInt8]
        var offset: Int
        let completion: WriteCompletion
        /// Nil for a write from the loop itself, which no task can withdraw.
        let token: RequestToken?
    }

    /// Largest plaintext piece handed to the engine at once: one TLS record.
    private static let writeSlice = 16 * 1024
    /// The least free space a socket read gets: one TLS record.
    private static let minimumReadSpace = 16 * 1024
    static let closeTimeout: Duration = .seconds(5)

    // The stored properties below are marked `@exclusivity(unchecked)`: the driver lives on its loop thread only, so
    // no two threads ever reach them, and the runtime's check on each access (a call into the Swift runtime, about 75
    // instructions) ran about 26 times per unary call on each side, some 2,000 instructions of the call's 50,000.
    // Overlapping accesses from re-entrant calls are what the check would still catch; `perform` queues the actions
    // of a re-entrant event (`pendingActions`, `performing`) instead of nesting them, which is what keeps them apart.
    let loop: EventLoop
    private let fd: Int32
    private let engine: any ConnectionEngine
    @exclusivity(unchecked) private var machine: ConnectionStateMachine
    @exclusivity(unchecked) private var registration: UInt64?
    @exclusivity(unchecked) private var socketClosed = false
    /// `abort` is closing the connection with a TCP reset: nothing buffered goes out first.
    @exclusivity(unchecked) private var resetting = false
    @exclusivity(unchecked) private var onEstablished: EstablishedHandler?
    @exclusivity(unchecked) private var timer: EventLoopTimer?
    @exclusivity(unchecked) private var placement: PeerPlacement

    /// Decrypted bytes waiting for the reader, in one array handed over whole.
    @exclusivity(unchecked) private var inbound: [UInt8] = []
    @exclusivity(unchecked) private var reader: CheckedContinuation<[UInt8]?, any Error>?
    @exclusivity(unchecked) private var readerToken: RequestToken?
    /// Push mode (`receive`): every delivery goes to this handler on the loop, and reading re-arms at once.
    @exclusivity(unchecked) private var pushReader: (@Sendable (Result<[UInt8]?, any Error>) -> Void)?
    @exclusivity(unchecked) private var writers: [Writer] = []
    @exclusivity(unchecked) private var sendBuffer: [UInt8] = []
    @exclusivity(unchecked) private var sendOffset = 0
    @exclusivity(unchecked) private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    /// Owners waiting for this side's end of stream to be sent (`shutdownWrite`).
    @exclusivity(unchecked) private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []

    @exclusivity(unchecked) private var pendingActions: [ConnectionStateMachine.Action] = []
    @exclusivity(unchecked) private var performing = false

    /// Highest number of ciphertext bytes ever waiting for the socket (to observe backpressure).
    @exclusivity(unchecked) private(set) var peakOutboundBuffered = 0

    init(
        loop: EventLoop, fd: Int32, engine: any ConnectionEngine, connecting: Bool,
        limits: ConnectionStateMachine.Limits, halfClose: Bool = false,
        onEstablished: @escaping EstablishedHandler
    ) {
        self.loop = loop
        self.fd = fd
        self.engine = engine
        placement = PeerPlacement(fd: fd)
        machine = ConnectionStateMachine(
            phase: connecting ? .connecting : .handshaking, limits: limits, halfClose: halfClose)
        self.onEstablished = onEstablished
    }

    /// Registers with the loop and starts the handshake deadline. On failure the socket is closed and the
    /// established handler is called with the error.
    func start(handshakeTimeout: Duration) {
        _ = machine.start()  // the registration below takes the machine's initial interest
        do throws(TransportError) {
            registration = try loop.register(fd: fd, interest: machine.interest, handler: self)
        } catch {
            teardown(error)
            return
        }
        let bound = LoopBound(self, loop: loop)
        timer = loop.scheduleTimer(after: handshakeTimeout) { bound.value.handle(bound.value.machine.timedOut()) }
        handle(machine.registered())
    }

    /// Ciphertext not yet taken by the kernel: in `sendBuffer`, or still in the engine (written, not yet moved).
    var outboundBuffered: Int { queuedForSocket + engine.pendingCiphertextCount }
    private var queuedForSocket: Int { sendBuffer.count - sendOffset }
    var hasWaitingWriter: Bool { !writers.isEmpty }
    /// See `PeerPlacement`.
    func peerSharesCPU() -> Bool { placement.peerSharesCPU() }

    // MARK: Requests (on the loop)

    func read(_ token: RequestToken, _ continuation: CheckedContinuation<[UInt8]?, any Error>) {
        guard !token.isCancelled else {
            continuation.resume(throwing: Self.cancelled)
            return
        }
        guard reader == nil else {
            continuation.resume(throwing: TransportError(.invalidState, "concurrent reads on one connection"))
            return
        }
        reader = continuation
        readerToken = token
        handle(machine.readRequested())
    }

    /// Switches to push mode: received bytes go to `handler` on this loop as they arrive, with no task to wake
    /// in between; the end of the stream is `.success(nil)`, a failure `.failure`. Backpressure is then the
    /// handler's job (the RPC layer's flow-control windows bound what a peer may send).
    func receive(_ handler: @escaping @Sendable (Result<[UInt8]?, any Error>) -> Void) {
        guard reader == nil, pushReader == nil else {
            handler(.failure(TransportError(.invalidState, "concurrent reads on one connection")))
            return
        }
        pushReader = handler
        handle(machine.readRequested())
    }

    func cancelRead(_ token: RequestToken) {
        guard readerToken === token, let reader = reader.take() else { return }
        readerToken = nil
        handle(machine.readCancelled())
        reader.resume(throwing: Self.cancelled)
    }

    func write(_ bytes: [UInt8], _ token: RequestToken, _ continuation: CheckedContinuation<Void, any Error>) {
        write(bytes, token) { continuation.resume(with: $0) }
    }

    /// Queues `bytes`; `completion` runs on the loop once they are handed to the engine — before this returns
    /// when the outbound buffer has room, which is the usual case.
    func write(_ bytes: [UInt8], _ token: RequestToken?, completion: @escaping WriteCompletion) {
        if let token, token.isCancelled {
            completion(.failure(Self.cancelled))
            return
        }
        guard !bytes.isEmpty else {
            completion(.success(()))
            return
        }
        writers.append(Writer(bytes: bytes, offset: 0, completion: completion, token: token))
        handle(machine.writeRequested())
    }

    /// Withdraws a write that has not started; a write partly handed to TLS completes (or fails with the
    /// connection) so that the byte stream never carries half a message.
    func cancelWrite(_ token: RequestToken) {
        guard let index = writers.firstIndex(where: { $0.token === token && $0.offset == 0 }) else { return }
        writers.remove(at: index).completion(.failure(Self.cancelled))
    }

    static let cancelled = TransportError(.cancelled, "the waiting task was cancelled")

    func close(_ continuation: CheckedContinuation<Void, Never>?) {
        if let continuation {
            guard machine.phase != .closed else {
                continuation.resume()
                return
            }
            closeWaiters.append(continuation)
        }
        let wasClosing = machine.phase == .closing
        handle(machine.closeRequested())
        if machine.phase == .closing && !wasClosing {
            let bound = LoopBound(self, loop: loop)
            timer = loop.scheduleTimer(after: Self.closeTimeout) { bound.value.handle(bound.value.machine.timedOut()) }
        }
    }

    /// Ends this side's stream once what is written is sent, and resumes `continuation` then (or once the
    /// connection is closed): see `ConnectionStateMachine.shutdownWriteRequested`.
    func shutdownWrite(_ continuation: CheckedContinuation<Void, Never>) {
        // Nothing to wait for once the end is sent: a second call waited until the connection was torn down.
        guard machine.phase == .open, !machine.writeShutdownSent else {
            continuation.resume()
            return
        }
        shutdownWaiters.append(continuation)
        handle(machine.shutdownWriteRequested())
    }

    /// Ends the connection at once with a TCP reset (`Socket.resetOnClose`): nothing buffered is sent, and pending
    /// reads and writes fail with `reason`.
    func abort(_ reason: TransportError) {
        guard machine.phase != .closed else { return }
        if !socketClosed { Socket.resetOnClose(fd) }
        resetting = true
        handle(machine.failed(reason))
    }

    // MARK: EventLoopHandler

    func handleEvent(readable: Bool, writable: Bool, failed: Bool) {
        if machine.phase == .connecting {
            guard writable || failed else { return }
            do throws(TransportError) {
                try Socket.connectResult(fd)
                handle(machine.tcpConnected())
            } catch {
                handle(machine.failed(error))
            }
            return
        }
        // With EPOLLHUP the socket is read even when inbound is full: the peer is gone and only EOF remains.
        if readable || failed {
            // A peer on this CPU answers only once the loop sleeps: no idle poll after this iteration.
            if readable && placement.peerSharesCPU() { loop.peerSharedCPUThisIteration = true }
            readSocket()
        }
        if writable && machine.phase != .closed { transmit() }
    }

    func eventLoopStopping() {
        handle(machine.failed(TransportError(.eventLoopStopped, "event loop \(loop.name) stopped")))
    }

    // MARK: Actions

    /// Carries out `actions` in order. An action may feed the machine again; the actions that returns wait in
    /// `pendingActions` until the current ones are done, so they are carried out in the order they were decided.
    private func handle(_ actions: [ConnectionStateMachine.Action]) {
        guard !actions.isEmpty else { return }
        guard !performing else {
            pendingActions += actions
            return
        }
        performing = true
        for action in actions { perform(action) }
        var index = 0
        while index < pendingActions.count {
            let action = pendingActions[index]
            index += 1
            perform(action)
        }
        pendingActions.removeAll(keepingCapacity: true)
        performing = false
    }

    private func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .setInterest(let interest):
            if let registration { loop.setInterest(interest, fd: fd, registration: registration) }
        case .driveHandshake:
            driveHandshake()
        case .reportEstablished:
            cancelTimer()
            onEstablished.take()?(.success(engine.peer))
        case .decrypt:
            decrypt()
        case .deliverToReader:
            let bytes = inbound
            inbound = []
            readerToken = nil
            if let pushReader {
                pushReader(.success(bytes))
                handle(machine.readRequested())
            } else {
                reader.take()?.resume(returning: bytes)
            }
        case .finishReader:
            readerToken = nil
            reader.take()?.resume(returning: nil)
            pushReader.take()?(.success(nil))
        case .failReader(let error):
            readerToken = nil
            reader.take()?.resume(throwing: error)
            pushReader.take()?(.failure(error))
        case .admitWrites:
            admitWrites()
        case .failWriters(let error):
            let failed = writers
            writers.removeAll()
            for writer in failed { writer.completion(.failure(error)) }
        case .sendCloseNotify:
            engine.close()
            transmit()
        case .closeSocket:
            teardown(nil)
        case .shutdownSocketWrite:
            Socket.shutdownWrite(fd)
            let waiters = shutdownWaiters
            shutdownWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        case .fail(let error):
            teardown(error)
        case .refuseNewestWriter(let error):
            writers.popLast()?.completion(.failure(error))
        }
    }

    private func driveHandshake() {
        do throws(TransportError) {
            let status = try engine.handshake()
            transmit()
            if status == .complete { handle(machine.handshakeCompleted()) }
        } catch {
            // Queue the alert OpenSSL produced; teardown sends it if the socket accepts it right away.
            engine.takeCiphertext(appendingTo: &sendBuffer)
            handle(machine.failed(error))
        }
    }

    private func readSocket() {
        guard machine.phase != .closed else { return }
        do throws(TransportError) {
            // Straight into the engine's buffer, where OpenSSL reads the records from.
            switch try Socket.read(fd, into: engine.ciphertextSpace(atLeast: Self.minimumReadSpace)) {
            case .bytes(let count):
                engine.ciphertextReceived(count)
                handle(machine.ciphertextArrived())
            case .endOfFile:
                engine.receiveEOF()
                handle(machine.ciphertextArrived(endOfFile: true))
            case .wouldBlock:
                break
            }
        } catch {
            handle(machine.failed(error))
        }
    }

    /// Decrypts everything buffered into one new array sized from the engine's bound, so each record is decrypted
    /// straight into the bytes handed to the reader: no scratch copy, no growing array.
    private func decrypt() {
        var peerClosed = false
        var failure: TransportError?
        reading: while failure == nil && !peerClosed {
            let bound = engine.plaintextBound
            guard bound > 0 else {
                // Nothing buffered: still ask once, for the end of the stream or an error.
                do throws(TransportError) {
                    switch try engine.readPlaintext(appendingTo: &inbound, maxCount: Self.writeSlice) {
                    case .appended: break
                    case .needsMoreData: break reading
                    case .closed: peerClosed = true
                    }
                } catch {
                    failure = error
                }
                continue
            }
            var full = false
            let chunk = [UInt8](unsafeUninitializedCapacity: bound) { buffer, initialized in
                while initialized < buffer.count {
                    let space = UnsafeMutableRawBufferPointer(
                        UnsafeMutableBufferPointer(rebasing: buffer[initialized...]))
                    do throws(TransportError) {
                        switch try engine.readPlaintext(into: space) {
                        case .appended(let count):
                            initialized += count
                            // Nothing left to decrypt: asking again would only hear WANT_READ, at the cost of a
                            // TLS read and its error-queue handling on every packet.
                            if engine.plaintextBound == 0 { return }
                        case .needsMoreData: return
                        case .closed:
                            peerClosed = true
                            return
                        }
                    } catch {
                        failure = error
                        return
                    }
                }
                full = true
            }
            if inbound.isEmpty { inbound = chunk } else { inbound += chunk }
            if !full { break }
        }
        if let failure {
            handle(machine.failed(failure))
            return
        }
        transmit()  // reading may produce records to send (key updates)
        handle(machine.plaintextBuffered(total: inbound.count))
        if peerClosed { handle(machine.peerClosed()) }
    }

    /// Encrypts waiting writers' bytes while the outbound buffer is below its high-water mark.
    private func admitWrites() {
        while !writers.isEmpty && outboundBuffered < machine.limits.outboundHighWater {
            let end = min(writers[0].bytes.count, writers[0].offset + Self.writeSlice)
            let error: TransportError? = writers[0].bytes.withUnsafeBytes { buffer in
                do throws(TransportError) {
                    try engine.writePlaintext(UnsafeRawBufferPointer(rebasing: buffer[writers[0].offset..<end]))
                    return nil
                } catch {
                    return error
                }
            }
            if let error {
                handle(machine.failed(error))
                return
            }
            // The records stay in the engine (counted by `outboundBuffered`) until `transmit` sends them together.
            writers[0].offset = end
            if end == writers[0].bytes.count {
                writers.removeFirst().completion(.success(()))
            }
        }
        transmit()
    }

    /// Moves the engine's output to the socket as far as the kernel takes it, then reports the backlog.
    private func transmit() {
        peakOutboundBuffered = max(peakOutboundBuffered, outboundBuffered)
        if queuedForSocket > 0 {
            let result = sendBuffer.withUnsafeBytes { buffer in
                Result { () throws(TransportError) in
                    try Socket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[sendOffset...]))
                }
            }
            do throws(TransportError) {
                sendOffset += try result.get()
                if sendOffset == sendBuffer.count {
                    sendBuffer.removeAll(keepingCapacity: true)
                    sendOffset = 0
                } else if sendOffset > 64 * 1024 && sendOffset * 2 > sendBuffer.count {
                    sendBuffer.removeFirst(sendOffset)
                    sendOffset = 0
                }
            } catch {
                sendFailed(error)
                return
            }
        }
        if queuedForSocket == 0, let error = sendFromEngine() {
            sendFailed(error)
            return
        }
        handle(machine.outboundChanged(buffered: outboundBuffered, writersWaiting: !writers.isEmpty))
    }

    /// A TLS client whose send fails has usually been hung up on by a server that refused its certificate (in TLS 1.3
    /// after the client's handshake finished); the alert saying why may still wait unread in the socket, and it
    /// tells more than the broken pipe. The connection fails either way, so what it decrypts on the way is dropped.
    private func sendFailed(_ error: TransportError) {
        guard let tls = engine as? TLSEngine, tls.side == .client, tls.isHandshakeComplete else {
            handle(machine.failed(error))
            return
        }
        reading: while true {
            do throws(TransportError) {
                switch try Socket.read(fd, into: engine.ciphertextSpace(atLeast: Self.minimumReadSpace)) {
                case .bytes(let count): engine.ciphertextReceived(count)
                case .endOfFile:
                    engine.receiveEOF()
                    break reading
                case .wouldBlock: break reading
                }
            } catch {
                break reading
            }
        }
        var dropped: [UInt8] = []
        while true {
            do throws(TransportError) {
                guard case .appended = try engine.readPlaintext(appendingTo: &dropped, maxCount: Self.writeSlice)
                else { break }
                dropped.removeAll(keepingCapacity: true)
            } catch let refusal where refusal.code == .certificateRefused {
                handle(machine.failed(refusal))
                return
            } catch {
                break
            }
        }
        handle(machine.failed(error))
    }

    /// Sends the engine's ciphertext from where the engine keeps it; what the kernel does not take stays there
    /// (counted by `outboundBuffered`) until the socket is writable again.
    private func sendFromEngine() -> TransportError? {
        while true {
            let pending = engine.pendingCiphertext
            guard pending.count > 0 else { return nil }
            do throws(TransportError) {
                let sent = try Socket.send(fd, pending)
                engine.dropCiphertext(sent)
                if sent < pending.count { return nil }
            } catch {
                return error
            }
        }
    }

    /// Releases the socket and completes everyone still waiting. `error` is nil for a clean close.
    private func teardown(_ error: TransportError?) {
        cancelTimer()
        // A reset sends nothing more; another failure tells the peer why if it can.
        if error != nil, !resetting {
            engine.takeCiphertext(appendingTo: &sendBuffer)
        }
        if error != nil, !resetting, queuedForSocket > 0 {
            // Best effort: the peer learns why (a TLS alert) if the kernel takes the bytes now.
            _ = sendBuffer.withUnsafeBytes { buffer in
                try? Socket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[sendOffset...]))
            }
        }
        sendBuffer.removeAll()
        sendOffset = 0
        if let registration {
            loop.deregister(fd: fd, registration: registration)
            self.registration = nil
        }
        if !socketClosed {
            socketClosed = true
            Socket.close(fd)
        }
        let failure = error ?? ConnectionStateMachine.closedLocally
        onEstablished.take()?(.failure(failure))
        readerToken = nil
        reader.take()?.resume(throwing: failure)
        pushReader.take()?(.failure(failure))
        let failedWriters = writers
        writers.removeAll()
        for writer in failedWriters { writer.completion(.failure(failure)) }
        // Each list on its own: joined, every close with a waiter copied them into a new array.
        let waiters = closeWaiters
        closeWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
        let shutdownWaiting = shutdownWaiters
        shutdownWaiters.removeAll()
        for waiter in shutdownWaiting { waiter.resume() }
    }

    private func cancelTimer() {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }
}

extension ConnectionDriver {
    /// Creates a driver for `fd` and starts it; `established` is called once, on the loop, with the driver and
    /// its peer when the connection is established, or with the failure (the socket is then closed). The driver
    /// is returned so that the attempt can be abandoned (`abandon()`).
    @discardableResult
    static func launch(
        loop: EventLoop, fd: Int32, engine: any ConnectionEngine, connecting: Bool,
        limits: ConnectionStateMachine.Limits, halfClose: Bool = false, handshakeTimeout: Duration,
        established: @escaping (Result<(LoopBound<ConnectionDriver>, PeerIdentity?), TransportError>) -> Void
    ) -> LoopBound<ConnectionDriver> {
        var driver: ConnectionDriver?
        let created = ConnectionDriver(
            loop: loop, fd: fd, engine: engine, connecting: connecting, limits: limits, halfClose: halfClose
        ) {
            result in
            guard let launched = driver else { return }
            driver = nil  // break the cycle driver -> handler -> driver
            established(result.map { (LoopBound(launched, loop: loop), $0) })
        }
        driver = created
        created.start(handshakeTimeout: handshakeTimeout)
        return LoopBound(created, loop: loop)
    }

    /// Ends an attempt that is not established yet with `.cancelled` (its `established` callback says so); does
    /// nothing to an established connection.
    func abandon() {
        handle(machine.abandoned())
    }
}

/// A connection attempt that the task awaiting it may abandon: `connect` records the attempt's driver once it is
/// launched, and a cancellation, whether it comes before or after that, ends the attempt on the loop instead of
/// leaving the task to wait for the connect or handshake timeout.
final class ConnectAttempt: Sendable {
    private struct State {
        var driver: LoopBound<ConnectionDriver>?
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Whether the attempt was abandoned before it was launched (on the loop: then it must not start).
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Records the launched attempt; abandons it at once when the task was cancelled in between.
    func launched(_ driver: LoopBound<ConnectionDriver>) {
        let cancelled = state.withLock { state in
            state.driver = driver
            return state.cancelled
        }
        if cancelled { driver.value.abandon() }
    }

    static let cancelledError = ConnectionStateMachine.attemptCancelled

    /// Runs one connection attempt for the calling task: `launch` runs on `loop`, starts the socket and its driver,
    /// returns the driver and hands the outcome to `resume`. Cancelling the task abandons the attempt.
    static func connect<Connection: Sendable>(
        on loop: EventLoop,
        launch:
            @escaping @Sendable (_ resume: @escaping (Result<Connection, TransportError>) -> Void)
            throws(TransportError)
            -> LoopBound<ConnectionDriver>
    ) async throws -> Connection {
        let attempt = ConnectAttempt()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let submitted = loop.execute {
                    guard !attempt.isCancelled else {
                        continuation.resume(throwing: cancelledError)
                        return
                    }
                    do throws(TransportError) {
                        attempt.launched(try launch { continuation.resume(with: $0) })
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                if !submitted { continuation.resume(throwing: ConnectionHandle.stopped(loop)) }
            }
        } onCancel: {
            attempt.cancel()
        }
    }

    /// The task awaiting the attempt was cancelled.
    func cancel() {
        guard
            let driver = state.withLock({ state -> LoopBound<ConnectionDriver>? in
                state.cancelled = true
                return state.driver
            })
        else { return }
        _ = driver.loop.execute { driver.value.abandon() }
    }
}

/// Marks one read or write request so that a cancelled task can withdraw it, whichever of the request and the
/// cancellation reaches the loop first.
final class RequestToken: Sendable {
    private let state = Mutex(false)

    var isCancelled: Bool { state.withLock { $0 } }

    func cancel() { state.withLock { $0 = true } }
}

extension Optional {
    /// Returns the value and leaves nil behind, so a continuation can be resumed only once.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
