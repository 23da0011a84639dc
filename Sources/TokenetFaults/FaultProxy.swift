import Synchronization
import TokenetTransport

/// A TCP proxy that injects faults between two Tokenet parties: point one party at it (a node's `--issuer`, a
/// CLI's address) and it carries every byte to the upstream address, as delayed, held or cut as the fault in force
/// says (`Fault`; `set(_:)` changes it at any time, `reset()` cuts every connection).
///
/// It never looks inside the bytes, so TLS passes through it end to end: both parties still authenticate each other
/// and the proxy needs no keys. The decisions are `FaultProxyStateMachine`'s; this class only carries out its
/// actions: one child task per connection, which reads both sides and writes each direction in order. A side's end
/// of stream is carried on as a half-close (`shutdownWrite`), so an answer still coming the other way arrives.
public final class FaultProxy: Sendable {
    /// The address the proxy listens on (its port is the one bound when 0 was asked for).
    public let host: String
    public let port: UInt16
    public let upstreamHost: String
    public let upstreamPort: UInt16
    /// Told of each connection to the upstream address: nil when made, the error when it could not be. The client
    /// only sees its connection close, which its TLS reports as an unexpected end of file: the proxy's operator is
    /// the one who can be told that the upstream address answers nothing.
    public typealias UpstreamReport = @Sendable (_ failure: (any Error)?) -> Void

    private let listener: PlainListener
    /// Both sides of every connection carry a half-close on rather than closing at the peer's end of stream.
    private static let connectionOptions = PlainConnection.Options(halfClose: true)
    private let upstreamReport: UpstreamReport?
    private let state: Mutex<State>

    /// A chunk on its way out, not to be written before `notBefore` unless a hurry brings it forward; `number`
    /// counts the chunks of its connection and direction, from 1.
    typealias Outgoing = (bytes: [UInt8], notBefore: ContinuousClock.Instant, number: UInt64)

    /// What a direction's writer is handed, in order: chunks, then perhaps the end of the sender's stream, which
    /// goes on after them.
    enum Outbound {
        case chunk(Outgoing)
        case end
    }

    /// One direction of one connection.
    struct Way: Hashable {
        var id: UInt64
        var direction: FaultProxyStateMachine.Direction
    }

    /// A shortened or lifted delay: the chunks numbered up to `upTo` go by `notAfter`.
    struct Hurry {
        var upTo: UInt64
        var notAfter: ContinuousClock.Instant
    }

    struct State {
        var machine: FaultProxyStateMachine
        var links: [UInt64: Link] = [:]
        /// Connections that ended (both directions, or an error), whose writers still deliver what they hold (a delay
        /// may keep them for minutes): a reset or the proxy's end must still be able to cut them.
        var draining: [UInt64: Link] = [:]
        /// Readers paused by a partition, woken when the fault changes.
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// Chunks queued so far per way, which numbers the next one.
        var queued: [Way: UInt64] = [:]
        /// The hurries not yet past, per way.
        var hurries: [Way: [Hurry]] = [:]
        /// Writers waiting for their chunk's instant, each with the timer that wakes it; a hurry wakes it first.
        var sleepers: [Way: (continuation: CheckedContinuation<Void, Never>, timer: Task<Void, Never>)] = [:]

        /// When `chunk` may go: its own instant, or earlier when a hurry queued after it says so. Forgets the
        /// hurries of chunks already written.
        mutating func due(of chunk: Outgoing, on way: Way) -> ContinuousClock.Instant {
            guard var pending = hurries[way] else { return chunk.notBefore }
            pending.removeAll { $0.upTo < chunk.number }
            hurries[way] = pending.isEmpty ? nil : pending
            return pending.reduce(chunk.notBefore) { min($0, $1.notAfter) }
        }

        /// Wakes the writer of `way` if it sleeps; returns its timer, to cancel outside the lock.
        mutating func wake(_ way: Way) -> Task<Void, Never>? {
            guard let sleeper = sleepers.removeValue(forKey: way) else { return nil }
            sleeper.continuation.resume()
            return sleeper.timer
        }

        /// Forgets what a connection's ways kept.
        mutating func forget(_ id: UInt64) -> [Task<Void, Never>] {
            FaultProxyStateMachine.Direction.both.compactMap { direction in
                let way = Way(id: id, direction: direction)
                queued[way] = nil
                hurries[way] = nil
                return wake(way)
            }
        }
    }

    /// The running parts of one proxied connection.
    struct Link {
        var client: PlainConnection
        var upstream: PlainConnection
        var outboxes: [FaultProxyStateMachine.Direction: AsyncStream<Outbound>.Continuation]
        /// Finished to end the connection at once (a reset).
        var abort: AsyncStream<Void>.Continuation
        /// Set by a reset before anything of the link stops, so that the link's own task, which may see its writers
        /// end first, resets both sides too instead of closing them: its orderly close sent a FIN ahead of the reset,
        /// and the client read a clean end of stream where `reset` promises ECONNRESET.
        var wasCut: CutMark
    }

    /// Whether a link was cut by a reset.
    final class CutMark: Sendable {
        private let flag = Atomic<Bool>(false)
        func mark() { flag.store(true, ordering: .releasing) }
        var isMarked: Bool { flag.load(ordering: .acquiring) }
    }

    private init(
        listener: PlainListener, upstreamHost: String, upstreamPort: UInt16, fault: Fault, holdLimit: Int,
        upstreamReport: UpstreamReport?
    ) {
        self.listener = listener
        self.upstreamReport = upstreamReport
        host = listener.host
        port = listener.port
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        var machine = FaultProxyStateMachine(holdLimit: holdLimit)
        _ = machine.set(fault, at: .now)
        state = Mutex(State(machine: machine))
    }

    /// Listens on host:port (port 0 picks a free one) for connections to carry to upstreamHost:upstreamPort, with
    /// `fault` in force from the start. Serve them with `serve()`. Throws `FaultError(.address)`. `acceptReport`
    /// hears why the listener stopped accepting for a while (the process out of file descriptors): the clients
    /// waiting meanwhile are neither carried nor closed.
    public static func bind(
        host: String = "127.0.0.1", port: UInt16 = 0, upstreamHost: String, upstreamPort: UInt16,
        fault: Fault = .none, holdLimit: Int = 1 << 20, on loop: EventLoop, upstreamReport: UpstreamReport? = nil,
        acceptReport: (@Sendable (TransportError) -> Void)? = nil
    ) async throws(FaultError) -> FaultProxy {
        do {
            let listener = try await PlainListener.bind(
                host: host, port: port, on: loop, options: connectionOptions,
                onAcceptFailure: { acceptReport?($0) })
            return FaultProxy(
                listener: listener, upstreamHost: upstreamHost, upstreamPort: upstreamPort, fault: fault,
                holdLimit: holdLimit, upstreamReport: upstreamReport)
        } catch {
            throw FaultError(
                .address, "cannot listen on \(Socket.display(host: host, port: port))", cause: error)
        }
    }

    /// The faults in force, as commands name them (`FaultProxyStateMachine.summary`).
    public var summary: String { state.withLock { $0.machine.summary } }

    /// The fault in force in `direction`.
    public func fault(_ direction: FaultProxyStateMachine.Direction) -> Fault {
        state.withLock { $0.machine.fault(direction) }
    }

    /// Whether new connections are refused.
    public var refusing: Bool { state.withLock { $0.machine.refusing } }

    /// The connections being carried.
    public var connectionCount: Int { state.withLock { $0.machine.connectionCount } }

    /// Puts `fault` in force for every connection, from the next byte on: in one direction, or in both.
    public func set(_ fault: Fault, only direction: FaultProxyStateMachine.Direction? = nil) {
        let (cutting, waiters) = state.withLock { state in
            let actions = state.machine.set(fault, only: direction, at: .now)
            let waiters = Array(state.waiters.values)
            state.waiters = [:]
            return (Self.apply(actions, to: &state), waiters)
        }
        for waiter in waiters { waiter.resume() }
        cut(cutting)
    }

    /// Cuts every connection now with a TCP reset to both sides (`PlainConnection.abort`): nothing more is written,
    /// and each side's next read or write fails with ECONNRESET, as after a crash.
    public func reset() {
        cut(
            state.withLock { state in
                let cutting = Self.apply(state.machine.reset(), to: &state) + state.draining.values
                state.draining = [:]
                return cutting
            })
    }

    /// Accepts and carries connections until `close()`, then returns once every connection has ended.
    public func serve() async {
        await withDiscardingTaskGroup { group in
            for await client in listener.connections {
                let (id, action) = state.withLock { $0.machine.accepted() }
                group.addTask {
                    if action == .close(id) {
                        await client.close()
                    } else {
                        await self.carry(id, client)
                    }
                }
            }
        }
    }

    /// Stops accepting and cuts every connection; `serve()` then returns.
    public func close() async {
        await listener.close()
        reset()
    }

    // MARK: - One connection

    private enum Part { case reader, writer, aborted }

    private func carry(_ id: UInt64, _ client: PlainConnection) async {
        let upstream: PlainConnection
        do {
            upstream = try await PlainConnection.connect(
                host: upstreamHost, port: upstreamPort, on: client.eventLoop, options: Self.connectionOptions)
        } catch {
            // As if the upstream refused the connection: the client sees it close.
            upstreamReport?(error)
            _ = state.withLock { $0.machine.ended(id) }
            await client.close()
            return
        }
        upstreamReport?(nil)
        let (toUpstream, toUpstreamOut) = AsyncStream<Outbound>.makeStream()
        let (toClient, toClientOut) = AsyncStream<Outbound>.makeStream()
        let (aborted, abort) = AsyncStream<Void>.makeStream()
        let wasCut = CutMark()
        let registered = state.withLock { state in
            // A reset (or the end of the proxy) while connecting already forgot this connection.
            guard state.machine.carries(id) else { return false }
            state.links[id] = Link(
                client: client, upstream: upstream,
                outboxes: [.toUpstream: toUpstreamOut, .toClient: toClientOut], abort: abort, wasCut: wasCut)
            return true
        }
        guard registered else {
            await client.close()
            await upstream.close()
            return
        }
        await withTaskGroup(of: Part.self) { group in
            group.addTask { await self.read(id, from: client, .toUpstream) }
            group.addTask { await self.read(id, from: upstream, .toClient) }
            group.addTask {
                await self.write(Way(id: id, direction: .toUpstream), toUpstream, to: upstream, wasCut: wasCut)
            }
            group.addTask { await self.write(Way(id: id, direction: .toClient), toClient, to: client, wasCut: wasCut) }
            group.addTask {
                for await _ in aborted {}
                return .aborted
            }
            // Done when both writers have drained their outboxes (both directions ended, or an error ended the
            // connection), or at once on a reset.
            // `carry` holds the continuations, so no stream ends by itself.
            var writersDone = 0
            while let part = await group.next() {
                if part == .aborted { break }
                if part == .writer {
                    writersDone += 1
                    if writersDone == 2 { break }
                }
            }
            group.cancelAll()
        }
        let timers = state.withLock { state in
            _ = state.draining.removeValue(forKey: id)
            state.machine.drained(id)
            return state.forget(id)
        }
        for timer in timers { timer.cancel() }
        if wasCut.isMarked {
            await client.abort()
            await upstream.abort()
        } else {
            await client.close()
            await upstream.close()
        }
    }

    private func read(
        _ id: UInt64, from source: PlainConnection, _ direction: FaultProxyStateMachine.Direction
    ) async -> Part {
        while !Task.isCancelled {
            await waitUntilMayRead(id, direction)
            let bytes: [UInt8]?
            do { bytes = try await source.read() } catch { break }
            guard let bytes else {
                // The sender ended its stream: only this direction ends, and the answer may still be coming back.
                cut(state.withLock { Self.apply($0.machine.ended(id, direction), to: &$0) })
                return .reader
            }
            cut(state.withLock { Self.apply($0.machine.received(id, direction, bytes, at: .now), to: &$0) })
        }
        // A read error (a reset by the sender) or a cancellation: the other side is reset too.
        cut(state.withLock { Self.apply($0.machine.failed(id), to: &$0) })
        return .reader
    }

    private func write(
        _ way: Way, _ outgoing: AsyncStream<Outbound>, to destination: PlainConnection, wasCut: CutMark
    ) async -> Part {
        for await item in outgoing {
            guard case .chunk(let chunk) = item else {
                // After every byte before it; a reset that came first sends no FIN ahead of its own.
                if !wasCut.isMarked { await destination.shutdownWrite() }
                break
            }
            guard await waitUntilDue(chunk, on: way) else { break }
            do {
                try await destination.write(chunk.bytes)
            } catch {
                // The destination is gone (reset): the sender is reset too, rather than told a clean end.
                cut(state.withLock { Self.apply($0.machine.failed(way.id), to: &$0) })
                break
            }
            // Room for as many bytes more: a reader paused at the limit looks again.
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.machine.written(way.id, way.direction, chunk.bytes.count)
                guard !state.waiters.isEmpty, state.machine.mayRead(way.id, way.direction) else { return [] }
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
        return .writer
    }

    /// Waits until `chunk` may go, which a hurry can bring forward while it waits; false when cancelled.
    private func waitUntilDue(_ chunk: Outgoing, on way: Way) async -> Bool {
        while !Task.isCancelled {
            let due = state.withLock { $0.due(of: chunk, on: way) }
            if due <= .now { return true }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let timer = Task {
                        try? await Task.sleep(until: due, clock: .continuous)
                        state.withLock { $0.sleepers.removeValue(forKey: way) }?.continuation.resume()
                    }
                    let sleeping = state.withLock { state -> Bool in
                        // A hurry that came since `due` was read would find nobody to wake: look again.
                        guard !Task.isCancelled, state.due(of: chunk, on: way) == due else { return false }
                        state.sleepers[way] = (continuation, timer)
                        return true
                    }
                    if !sleeping {
                        timer.cancel()
                        continuation.resume()
                    } else if ContinuousClock.now >= due {
                        // The timer may have fired before the sleeper was registered (a due time a moment away), and
                        // found nobody to wake: the writer then slept for good, and its stream stalled.
                        state.withLock { $0.sleepers.removeValue(forKey: way) }?.continuation.resume()
                    }
                }
            } onCancel: {
                state.withLock { $0.wake(way) }?.cancel()
            }
        }
        return false
    }

    /// Returns at once unless the proxy holds as much of this direction as it may (held by a partition or on its
    /// way under a delay); then waits until the fault changes or bytes are written (or the task is cancelled).
    private func waitUntilMayRead(_ id: UInt64, _ direction: FaultProxyStateMachine.Direction) async {
        while !Task.isCancelled, !state.withLock({ $0.machine.mayRead(id, direction) }) {
            let waiter = state.withLock { state -> UInt64 in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let waitNow = state.withLock { state -> Bool in
                        guard !Task.isCancelled, !state.machine.mayRead(id, direction) else { return false }
                        state.waiters[waiter] = continuation
                        return true
                    }
                    if !waitNow { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume()
            }
        }
    }

    // MARK: - Actions

    /// Carries out `actions` under the lock: a forwarded chunk is queued on its direction's outbox at once, so
    /// chunks queue in the machine's order. Returns the links to cut, which `cut(_:)` does outside the lock.
    private static func apply(_ actions: [FaultProxyStateMachine.Action], to state: inout State) -> [Link] {
        var cutting: [Link] = []
        for action in actions {
            switch action {
            case .connectUpstream:
                break  // `serve()` starts the connection's task, which connects.
            case .forward(let id, let direction, let bytes, let notBefore):
                guard let outbox = state.links[id]?.outboxes[direction] else { break }
                let way = Way(id: id, direction: direction)
                let number = state.queued[way, default: 0] + 1
                state.queued[way] = number
                _ = outbox.yield(.chunk((bytes, notBefore, number)))
            case .hurry(let id, let direction, let notAfter):
                let way = Way(id: id, direction: direction)
                guard let upTo = state.queued[way] else { break }
                state.hurries[way, default: []].append(Hurry(upTo: upTo, notAfter: notAfter))
                state.wake(way)?.cancel()
            case .shutdownWrite(let id, let direction):
                // The writer ends the stream after what it holds, and stops.
                guard let outbox = state.links[id]?.outboxes[direction] else { break }
                _ = outbox.yield(.end)
                outbox.finish()
            case .finish(let id):
                // The writers drain their outboxes and end; `carry` then closes both sides.
                if let link = state.links.removeValue(forKey: id) {
                    for outbox in link.outboxes.values { outbox.finish() }
                    state.draining[id] = link
                }
            case .close(let id):
                if let link = state.links.removeValue(forKey: id) { cutting.append(link) }
            }
        }
        return cutting
    }

    /// Ends each link at once: its outboxes are dropped, its task stops, and both sides are reset.
    private func cut(_ links: [Link]) {
        for link in links {
            link.wasCut.mark()
            for outbox in link.outboxes.values { outbox.finish() }
            link.abort.finish()
            let client = link.client
            let upstream = link.upstream
            Task {
                await client.abort()
                await upstream.abort()
            }
        }
    }
}
