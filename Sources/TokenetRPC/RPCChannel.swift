import Foundation
import Synchronization
import TokenetTransport
import TokenetWire

/// What typed clients call through: one connection (`RPCClient`) or a self-healing channel (`RPCChannel`).
public protocol RPCCaller: Sendable {
    func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions
    ) async throws -> Response

    func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions
    ) async throws -> ResponseStream<Response>

    func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions,
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response

    func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>)

    /// Who answers this caller's calls now, from the certificate of its current connection; nil when it has no
    /// usable connection, in plaintext, and for callers that cannot tell.
    var connectedPeer: PeerIdentity? { get }
}

extension RPCCaller {
    public var connectedPeer: PeerIdentity? { nil }
}

extension RPCClient: RPCCaller {
    public var connectedPeer: PeerIdentity? { isUsable ? peerIdentity : nil }
}

/// Calls to one peer over a shared connection that is opened on first use and reopened after it is lost.
///
/// Concurrent calls share one connection; while it is being (re)made they wait for it. Failed attempts back off
/// exponentially with jitter, and a call waits for readiness only within its own deadline and `readinessWait`
/// (without a deadline, for a few attempts), then fails with `UNAVAILABLE` and the last connection error.
public final class RPCChannel: RPCCaller {
    public typealias Connector = @Sendable () async throws -> any ByteStream

    /// Delays between connection attempts.
    public struct Backoff: Sendable {
        public var initial: Duration
        public var maximum: Duration
        public var multiplier: Double
        /// Each delay is randomised by up to this fraction either way, so many clients do not retry in step.
        public var jitter: Double

        public init(
            initial: Duration = .milliseconds(100),
            maximum: Duration = .seconds(5),
            multiplier: Double = 1.6,
            jitter: Double = 0.2
        ) {
            self.initial = initial
            self.maximum = maximum
            self.multiplier = multiplier
            self.jitter = jitter
        }

        /// The delay before attempt `attempt` (1 for the first retry).
        ///
        /// The growth is compared with the cap before it multiplies a `Duration`: a channel whose peer has been
        /// down for a while counts hundreds of failures, and `initial * 1.6^failures` overflows a `Duration` (a
        /// trap) long before a cap applied to the product could help. A day bounds even a misconfigured maximum.
        public func delay(beforeAttempt attempt: Int, random: Double = Double.random(in: -1...1)) -> Duration {
            let ceiling = min(maximum, .seconds(86_400))
            guard initial > .zero, ceiling > .zero else { return .zero }
            let growth = pow(max(multiplier, 1), Double(max(attempt - 1, 0)))
            let room = Self.seconds(ceiling) / Self.seconds(initial)
            let capped = growth.isNaN || growth >= room ? ceiling : initial * growth
            return capped * (1 + min(max(jitter, 0), 1) * min(max(random, -1), 1))
        }

        private static func seconds(_ duration: Duration) -> Double {
            let (seconds, attoseconds) = duration.components
            return Double(seconds) + Double(attoseconds) / 1e18
        }
    }

    private struct State {
        var client: RPCClient?
        var connecting = false
        var failures = 0
        /// When the backoff after the last failed attempt runs out: counted from that failure, not from the call
        /// that comes next, so a call made after a quiet spell connects at once. Nil after a success.
        var nextAttemptAt: ContinuousClock.Instant?
        var lastError: (any Error)?
        /// The last attempt's failure when retrying cannot mend it (`isLasting`); nil after a success or another
        /// failure. The calls that waited for that attempt fail with it too.
        var lastingError: (any Error)?
        /// The kind of the failure last reported unreachable (`failureKind`), while attempts fail.
        var reportedKind: String?
        /// The latest failed attempt that said something about the peer (a kind of its own: not one cut short by
        /// its call's deadline or cancel), with when it failed (`lastFailure`); nil after a success.
        var lastPeerFailure: Failure?
        /// Calls waiting for the attempt in progress, by a number of their own so that one can leave early.
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter: UInt64 = 0
        var closed = false
        /// Connections the channel stopped using while they still carried calls (`retire`), until they have closed.
        var retired: [ObjectIdentifier: RPCClient] = [:]
    }

    private let connector: Connector
    private let settings: ConnectionSettings
    private let timers: ConnectionTimers
    private let backoff: Backoff
    /// Attempts a call without a deadline makes before giving up.
    private let attemptsWithoutDeadline: Int
    /// How long a call with a deadline waits for a connection while attempts fail, when its deadline is later.
    private let readinessWait: Duration
    /// What the channel connects to, for its messages ("the wallet-node at 127.0.0.1:7003 (--wallet)"): a caller that
    /// passes on "cannot connect" has a person wonder to what.
    private let peer: String?
    private let state = Mutex(State())
    private let onLinkChange: (@Sendable (LinkChange) -> Void)?

    /// The peer became unreachable, or reachable again: the first failed attempt after a connection (or at the
    /// first), and the first connection after failed attempts, each once, for the owner's log. Between them calls
    /// fail with their own errors; these say when the link itself went and came back.
    public enum LinkChange: Sendable, Equatable {
        /// `kind` tells one reason from another (`failureKind`): nil for an attempt its call's deadline or cancel
        /// cut short, which says nothing new about the peer.
        case unreachable(reason: String, kind: String? = nil)
        case reachable(afterFailedAttempts: Int)
    }

    public init(
        settings: ConnectionSettings = .defaults,
        timers: ConnectionTimers = ConnectionTimers(),
        backoff: Backoff = Backoff(),
        attemptsWithoutDeadline: Int = 5,
        readinessWait: Duration = RPCChannel.defaultReadinessWait,
        peer: String? = nil,
        onLinkChange: (@Sendable (LinkChange) -> Void)? = nil,
        connector: @escaping Connector
    ) {
        self.onLinkChange = onLinkChange
        self.connector = connector
        self.peer = peer
        self.settings = settings
        self.timers = timers
        self.backoff = backoff
        self.attemptsWithoutDeadline = attemptsWithoutDeadline
        self.readinessWait = readinessWait
    }

    /// Ten seconds: longer than a peer's restart and than the longest backoff (5 s and its jitter), so a call made
    /// while its peer restarts still reaches it; short enough that a person whose call needs a peer that is down
    /// hears so within seconds. A call's deadline alone (30 s from the CLI) had a command wait out nearly all of it
    /// against a peer that refused every attempt.
    public static let defaultReadinessWait: Duration = .seconds(10)

    /// Closes the current connection gracefully, and waits for those it stopped using to close too (their calls
    /// finish); later calls fail with `UNAVAILABLE`.
    public func close() async {
        let (client, retired) = state.withLock { state in
            state.closed = true
            return (state.client, Array(state.retired.values))
        }
        await client?.close()
        for connection in retired { await connection.close() }
    }

    /// Stops using `client` (it began closing, or refused a call as closing) and closes it gracefully: the calls
    /// still on it finish. Kept in `retired` until it has closed, for `close()` to wait for. Dropped instead, its
    /// connection's task was cancelled, and the next write failed every stream still running on it.
    private func retire(_ client: RPCClient) {
        let id = ObjectIdentifier(client)
        let first = state.withLock { state in
            if state.client === client { state.client = nil }
            return state.retired.updateValue(client, forKey: id) == nil
        }
        guard first else { return }
        Task {
            await client.close()
            self.state.withLock { _ = $0.retired.removeValue(forKey: id) }
        }
    }

    /// Who the current connection leads to (`RPCCaller.connectedPeer`).
    public var connectedPeer: PeerIdentity? { state.withLock { $0.client }?.connectedPeer }

    /// Number of failed connection attempts since the last success.
    public var consecutiveFailures: Int { state.withLock { $0.failures } }

    /// Whether a connection attempt, or the backoff before it, is under way.
    var isConnecting: Bool { state.withLock { $0.connecting } }

    /// Who the channel calls, as its owner named it (`peer`), for the owner's log.
    public var peerName: String? { peer }

    /// A failed connection attempt: why, and when.
    public struct Failure: Sendable, Equatable {
        public var reason: String
        public var at: ContinuousClock.Instant
    }

    /// The latest connection attempt that failed for a reason of the peer's, while attempts fail; nil once a
    /// connection is made. `LinkChange` reports a reason only when its kind changes, so this is the reason to quote
    /// when saying later that the peer is still not reached (a peer first refused, then found to listen without
    /// answering, is a different matter). An attempt cut short by its call's deadline says nothing of the peer.
    public var lastFailure: Failure? { state.withLock { $0.lastPeerFailure } }

    // MARK: - Calls

    /// A unary call. When a goaway shows that the server never processed it (the call crossed the server's
    /// shutdown or idle close on the wire), it goes once more, on the channel's next connection and within the
    /// same deadline: the caller sees the server's answer rather than an UNAVAILABLE it could do nothing about.
    /// So does a call that was never sent because the connection began closing between the channel handing it out
    /// and the call opening on it (`callMetAClosingConnection`). Any other failure, such as a connection lost after
    /// the call was sent, is the caller's to handle.
    public func unary<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> Response {
        let started = ContinuousClock.now
        let first = try await client(for: options)
        do {
            return try await first.unary(
                method, request, options: try Self.leftAfterConnecting(options, since: started))
        } catch let error as RPCError where error.callWasNotProcessed || error.callMetAClosingConnection {
            if error.callMetAClosingConnection { retire(first) }
            guard let again = Self.sendingAgain(options, since: started) else { throw error }
            return try await client(for: again).unary(method, request, options: again)
        }
    }

    /// A server-streaming call. Like a unary call, one that a goaway shows the server never processed goes once
    /// more, on the channel's next connection and within the same deadline; the stream's first `next()` does that
    /// (`ResponseStream.Reopening`), since the refusal arrives after the call is opened. A stream that has delivered
    /// a response was processed, and its failures are the caller's.
    public func serverStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        _ request: Request,
        options: CallOptions = CallOptions()
    ) async throws -> ResponseStream<Response> {
        let started = ContinuousClock.now
        let stream: ResponseStream<Response>
        let first = try await client(for: options)
        do {
            stream = try await first.serverStreaming(
                method, request, options: try Self.leftAfterConnecting(options, since: started))
        } catch let error as RPCError where error.callMetAClosingConnection {
            retire(first)
            guard let again = Self.sendingAgain(options, since: started) else { throw error }
            stream = try await client(for: again).serverStreaming(method, request, options: again)
        }
        let reopening = ResponseStream<Response>.Reopening { [self] refusal in
            guard let again = Self.sendingAgain(options, since: started) else { throw refusal }
            return try await client(for: again).serverStreaming(method, request, options: again).raw
        }
        return ResponseStream(stream, reopening: reopening)
    }

    /// A call opened on the channel's connection; on the next one when that one began closing before the call
    /// could open (`callMetAClosingConnection`).
    private func opened(_ path: String, _ options: CallOptions, since started: ContinuousClock.Instant) async throws
        -> (RPCClient, RPCClient.OpenCall)
    {
        let client = try await client(for: options)
        do {
            return (client, try client.open(path, try Self.leftAfterConnecting(options, since: started)))
        } catch let error as RPCError where error.callMetAClosingConnection {
            retire(client)
            guard let again = Self.sendingAgain(options, since: started) else { throw error }
            let next = try await self.client(for: again)
            return (next, try next.open(path, again))
        }
    }

    /// The options of a call's first attempt once its connection is ready: its timeout is what connecting left of it.
    /// Sent with the whole timeout, a call that waited 4 s of its 5 for a slow handshake ran up to 9 s, and the
    /// server was given 5 s more than the caller would wait.
    private static func leftAfterConnecting(_ options: CallOptions, since started: ContinuousClock.Instant)
        throws(RPCError) -> CallOptions
    {
        guard let left = sendingAgain(options, since: started) else {
            throw RPCError(
                .deadlineExceeded, "the deadline passed while connecting",
                cause: NotConnected(reason: "the deadline passed while connecting"))
        }
        return left
    }

    /// The options of a call sent once more: its timeout is what is left of the first one; nil when nothing is.
    private static func sendingAgain(_ options: CallOptions, since started: ContinuousClock.Instant) -> CallOptions? {
        var again = options
        if let timeout = options.timeout {
            let remaining = timeout - (ContinuousClock.now - started)
            guard remaining > .zero else { return nil }
            again.timeout = remaining
        }
        return again
    }

    /// A client-streaming call. One that a goaway shows the server never processed goes once more with the
    /// requests it sent (kept up to `RequestReplay.limit` bytes), on the channel's next connection and within the
    /// same deadline.
    public func clientStreaming<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions = CallOptions(),
        requests: @Sendable (RequestWriter<Request>) async throws -> Void
    ) async throws -> Response {
        let started = ContinuousClock.now
        let (client, call) = try await opened(method.path, options, since: started)
        let replay = RequestReplay(id: call.id, connection: client.connection)
        do {
            return try await client.respond(to: call, RequestWriter(replay), requests)
        } catch let error as RPCError where error.callWasNotProcessed {
            guard replay.canGoAgain, let again = Self.sendingAgain(options, since: started) else { throw error }
            let next = try await self.client(for: again)
            return try await next.response(Response.self, of: replay.reopen(method.path, again, on: next, after: error))
        }
    }

    /// A bidirectional call. One that a goaway shows the server never processed goes once more, as a
    /// client-streaming call does, when the caller next reads a response; requests sent after that go to the new
    /// call. A call that has delivered a response was processed, and its failures are the caller's.
    public func bidirectional<Request, Response>(
        _ method: MethodDescriptor<Request, Response>,
        options: CallOptions = CallOptions()
    ) async throws -> (requests: RequestWriter<Request>, responses: ResponseStream<Response>) {
        let started = ContinuousClock.now
        let (client, call) = try await opened(method.path, options, since: started)
        let replay = RequestReplay(id: call.id, connection: client.connection)
        let reopening = ResponseStream<Response>.Reopening { [self] refusal in
            guard replay.canGoAgain, let again = Self.sendingAgain(options, since: started) else { throw refusal }
            let next = try await self.client(for: again)
            let call = try replay.reopen(method.path, again, on: next, after: refusal)
            return RawResponseStream(call: call, connection: next.connection)
        }
        let responses = ResponseStream<Response>(call: call, connection: client.connection)
        return (RequestWriter(replay), ResponseStream(responses, reopening: reopening, replay: replay))
    }

    // MARK: - Connecting

    private enum Step {
        case ready(RPCClient)
        case wait
        /// Attempt a connection once `notBefore` (the backoff's end; nil for at once) has come, after `failures`.
        case connect(failures: Int, notBefore: ContinuousClock.Instant?)
        case fail(RPCError)
    }

    private func client(for options: CallOptions) async throws -> RPCClient {
        var deadline = options.timeout.map { ContinuousClock.now + $0 }
        if let inherited = ServerContext.current?.deadline { deadline = min(deadline ?? inherited, inherited) }
        return try await client(before: deadline, waitingAtMost: readinessWait)
    }

    /// A usable connection, made or remade as needed, before `deadline`, waiting for one at most `wait` while attempts
    /// fail (a connection attempt under way at its end may finish, within `deadline`).
    func client(before deadline: ContinuousClock.Instant?, waitingAtMost wait: Duration? = nil) async throws
        -> RPCClient
    {
        let waitEnds = wait.map { ContinuousClock.now + $0 }
        var attemptsMade = 0
        while true {
            var retired: RPCClient?
            let step: Step = state.withLock { state in
                if state.closed {
                    return .fail(
                        RPCError(
                            .unavailable, "the channel is closed", cause: NotConnected(reason: "the channel is closed"))
                    )
                }
                if let client = state.client, client.isUsable { return .ready(client) }
                retired = state.client
                state.client = nil
                if let refusal = retired?.connection.refusedAsOneTooMany {
                    // Refused as one connection too many, its goaway read after the hello was taken for a connection
                    // made: a failed attempt all the same, backed off from. The greeting (`waitForPeerHello`) sees
                    // the refusal only when the goaway comes in the same read as the hello; otherwise a refused
                    // wallet reconnected at once.
                    state.failures += 1
                    state.nextAttemptAt = .now + backoff.delay(beforeAttempt: state.failures)
                    state.lastError = TransportError(.io, refusal)
                }
                if state.connecting {
                    // The attempt under way still waits out its backoff, past this call's deadline or wait: fail now,
                    // as the call would had it been the one to attempt, rather than wait for the deadline.
                    if let deadline, let next = state.nextAttemptAt, next >= min(deadline, waitEnds ?? deadline) {
                        return .fail(
                            unavailable(
                                state.lastError, attempts: state.failures,
                                nextAttemptAt: attemptsMade == 0 ? next : nil))
                    }
                    return .wait
                }
                var notBefore = state.nextAttemptAt
                if deadline != nil, let waitEnds, attemptsMade > 0 || state.failures > 0 {
                    // Attempts have failed for as long as this call waits: the peer is down, and the caller hears
                    // so. Its last attempt is made when the wait ends, though the backoff would come later: a peer
                    // back at 9 s is reached, where giving up once the next attempt fell past the end had the call
                    // fail at about 7 s.
                    if ContinuousClock.now >= waitEnds {
                        return .fail(unavailable(state.lastError, attempts: state.failures))
                    }
                    if let next = notBefore, next > waitEnds { notBefore = waitEnds }
                }
                if deadline == nil, attemptsMade >= attemptsWithoutDeadline {
                    return .fail(unavailable(state.lastError, attempts: attemptsMade))
                }
                state.connecting = true
                return .connect(failures: state.failures, notBefore: notBefore)
            }
            // A connection that stopped being usable may still carry calls (draining after a goaway, or out of call
            // ids): it is closed gracefully, its calls finishing.
            if let retired { retire(retired) }
            switch step {
            case .ready(let client):
                return client
            case .fail(let error):
                throw error
            case .wait:
                // Another call's attempt may take longer than this call may wait: its own deadline bounds the wait.
                do {
                    try await withDeadline(deadline) { try await self.waitForAttempt() }
                } catch let error as RPCError where error.code == .deadlineExceeded {
                    throw RPCError(
                        .deadlineExceeded, "the deadline passed while connecting",
                        cause: NotConnected(reason: "the deadline passed while connecting"))
                } catch is CancellationError {
                    throw RPCError(
                        .cancelled, "the call was cancelled while connecting",
                        cause: NotConnected(reason: "cancelled while connecting"))
                }
                if let lasting = state.withLock({ $0.lastingError }) {
                    throw unavailable(lasting, attempts: 1)
                }
                if let deadline, ContinuousClock.now >= deadline {
                    throw RPCError(
                        .deadlineExceeded, "the deadline passed while connecting",
                        cause: NotConnected(reason: "the deadline passed while connecting"))
                }
            case .connect(let failures, let notBefore):
                attemptsMade += 1
                try await attempt(
                    afterFailures: failures, notBefore: notBefore, before: deadline, firstForCall: attemptsMade == 1)
            }
        }
    }

    /// Waits until the connection attempt in progress ends; throws `CancellationError` when the caller is cancelled.
    private func waitForAttempt() async throws {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state in
                    guard state.connecting, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// One connection attempt, once the backoff its predecessors earned has run out (`notBefore`). A call whose
    /// deadline comes first fails at once (gRPC's fail-fast) and leaves the backoff as it was. Always clears
    /// `connecting`.
    private func attempt(
        afterFailures failures: Int, notBefore: ContinuousClock.Instant?, before deadline: ContinuousClock.Instant?,
        firstForCall: Bool
    ) async throws {
        var outcome: Result<RPCClient, any Error>
        /// The call's deadline passed while the peer's hello was on its way: the call fails, the connection stays.
        var outOfTime: RPCError?
        if let deadline, let notBefore, notBefore >= deadline {
            let error = state.withLock {
                unavailable($0.lastError, attempts: $0.failures, nextAttemptAt: firstForCall ? notBefore : nil)
            }
            finishAttempt(.failure(error), countsAsFailure: false)
            throw error
        }
        do {
            if let notBefore, notBefore > .now { try await Task.sleep(until: notBefore, clock: .continuous) }
            // Closed during the backoff (a node stopping): no new connection to a peer nobody will call.
            guard !state.withLock({ $0.closed }) else { throw ChannelClosed() }
            let stream = try await withDeadline(deadline) { try await self.connector() }
            let client = RPCClient(stream: stream, settings: settings, timers: timers)
            do {
                try await greeted(client, before: deadline)
            } catch let error as RPCError where error.code == .deadlineExceeded && !Task.isCancelled {
                // A hello that comes a moment after one call's deadline says nothing against the peer: closed and
                // counted as a failure, the connection was lost for the next call, which waited out a backoff.
                outOfTime = error
            } catch {
                // Closed gracefully (its hello, then a goaway) and kept for `close()` to wait for: a node stopping
                // while this attempt waited for the peer's hello exited before an untracked close had run, and its
                // peer logged a connection closed "before its hello".
                retire(client)
                throw error
            }
            outcome = .success(client)
        } catch is ChannelClosed {
            // No failure of the peer's to count or report.
            let error = RPCError(
                .unavailable, "the channel is closed", cause: NotConnected(reason: "the channel is closed"))
            finishAttempt(.failure(error), countsAsFailure: false)
            throw error
        } catch {
            outcome = .failure(error)
        }
        if Task.isCancelled, case .failure = outcome {
            // The caller gave up (its client cancelled it, or the node is stopping): the peer did not fail, and
            // trying again at once would spin, each cancelled sleep counting as one more failure.
            finishAttempt(outcome, countsAsFailure: false)
            throw RPCError(
                .cancelled, "the call was cancelled while connecting",
                cause: NotConnected(reason: "cancelled while connecting"))
        }
        finishAttempt(outcome, countsAsFailure: true)
        // A peer reached that had not said hello by the call's deadline: the call ran out of time, as it would have
        // on a connection made earlier; the connection is kept, and the next call uses it once the hello comes.
        if let outOfTime { throw outOfTime }
        guard case .failure(let error) = outcome else { return }
        if Self.isLasting(error) {
            throw unavailable(error, attempts: 1)
        }
        if let deadline, ContinuousClock.now >= deadline {
            throw unavailable(error, attempts: failures + 1)
        }
    }

    /// An attempt found the channel closed after its backoff (`attempt`).
    private struct ChannelClosed: Error {}

    /// Returns once the server behind `client` has greeted it (`RPCConnection.waitForPeerHello`): only then is the
    /// peer reached. A server that refused this node's certificate ended the connection here, after a handshake
    /// that had looked complete from this side. The wait is bounded by the call's deadline, and without one by the
    /// connection's keepalive, which ends a connection whose peer says nothing (a fixed bound of its own made a
    /// loaded machine, whose server took longer to be scheduled, reconnect for nothing).
    private func greeted(_ client: RPCClient, before deadline: ContinuousClock.Instant?) async throws {
        do {
            try await withDeadline(deadline) { try await client.connection.waitForPeerHello() }
        } catch let error as RPCError where error.code == .deadlineExceeded {
            throw RPCError(
                .deadlineExceeded, "the deadline passed while waiting for the peer's hello",
                cause: NotConnected(reason: "the deadline passed before the peer's hello"))
        }
    }

    /// The kind of a failure that says only that no connection could be made (`failureKind`).
    public static let unreachableKind = "unreachable"

    /// The kind of a failed attempt, to tell a new reason from the same one again (`LinkChange.unreachable`): a
    /// refusal retrying cannot mend (`isLasting`) by its code, any other failure as one kind, since a peer that is
    /// down fails in several ways in turn (a reset, a handshake cut short) and each was logged as news; nil for an
    /// attempt its call's deadline or cancel cut short, which says nothing new about the peer.
    static func failureKind(_ error: any Error) -> String? {
        guard let error = error as? TransportError else { return nil }
        return error.isLasting ? "refused/\(error.code.rawValue)" : unreachableKind
    }

    /// Whether a failed connection attempt failed for a reason that trying again within one call cannot mend: the
    /// peer's certificate was refused (untrusted, expired, or of another role than this channel accepts), the peer
    /// refused this side's, the peer does not speak TLS, or this side's TLS files are unusable. Such a call fails at
    /// once instead of spending its deadline on attempts that must fail the same way (a `--tsp` pointing at the
    /// issuer took a call's whole 30 s to be reported). A later call tries again, after the backoff, in case
    /// someone fixed the certificates meanwhile.
    static func isLasting(_ error: any Error) -> Bool {
        (error as? TransportError)?.isLasting == true
    }

    private func finishAttempt(_ outcome: Result<RPCClient, any Error>, countsAsFailure: Bool) {
        var unwanted: RPCClient?
        let (waiters, change) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], LinkChange?) in
            state.connecting = false
            var change: LinkChange?
            switch outcome {
            case .success(let client) where state.closed:
                // The channel was closed while this attempt connected: nothing would ever close the connection.
                unwanted = client
            case .success(let client):
                if state.failures > 0 { change = .reachable(afterFailedAttempts: state.failures) }
                state.client = client
                state.failures = 0
                state.nextAttemptAt = nil
                state.lastError = nil
                state.lastingError = nil
                state.reportedKind = nil
                state.lastPeerFailure = nil
            case .failure(let error):
                if countsAsFailure {
                    // Said again when attempts start failing for another reason (the peer, down, came back with a
                    // certificate this side refuses): the first reason stood in the log while the next ones differed.
                    let kind = Self.failureKind(error)
                    if kind != nil { state.lastPeerFailure = Failure(reason: "\(error)", at: .now) }
                    if state.failures == 0 || (kind != nil && kind != state.reportedKind) {
                        state.reportedKind = kind
                        change = .unreachable(reason: "\(error)", kind: kind)
                    }
                    state.failures += 1
                    state.nextAttemptAt = .now + backoff.delay(beforeAttempt: state.failures)
                    state.lastError = error
                    state.lastingError = Self.isLasting(error) ? error : nil
                }
            }
            let waiters = Array(state.waiters.values)
            state.waiters.removeAll()
            return (waiters, change)
        }
        for waiter in waiters { waiter.resume() }
        if let change { onLinkChange?(change) }
        if let unwanted { retire(unwanted) }
    }

    /// `nextAttemptAt`: the call fails without an attempt of its own, the next being due after its deadline; the
    /// message says so, with when the last attempt failed. Without it, "after 9 attempt(s): …" read as if this
    /// call had just tried, seconds after the peer was back.
    private func unavailable(_ error: (any Error)?, attempts: Int, nextAttemptAt: ContinuousClock.Instant? = nil)
        -> RPCError
    {
        let reason = error.map { "\($0)" } ?? "no connection attempt finished"
        let target = peer.map { " to \($0)" } ?? ""
        var message = "cannot connect\(target) after \(attempts) attempt(s): \(reason)"
        if let nextAttemptAt {
            let due = DurationText.describe(max(.zero, nextAttemptAt - .now))
            message += "; no attempt was made for this call, whose deadline ends before the next one (due in \(due))"
        }
        return RPCError(
            .unavailable, message, cause: NotConnected(reason: reason, refused: error.map(Self.isLasting) ?? false))
    }
}

/// Runs `body`, cancelling it and throwing `DEADLINE_EXCEEDED` when `deadline` passes first: a connection attempt
/// and the wait for another call's attempt. (Calls themselves have their deadlines kept by their connection.)
nonisolated(nonsending) private func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant?,
    _ body: nonisolated(nonsending) @escaping @Sendable () async throws -> T
) async throws -> T {
    guard let deadline else { return try await body() }
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(until: deadline, clock: .continuous)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else {
            throw RPCError(.internal, "deadline race ended empty")
        }
        guard let value = first else {
            throw RPCError(.deadlineExceeded, "the deadline passed")
        }
        return value
    }
}
