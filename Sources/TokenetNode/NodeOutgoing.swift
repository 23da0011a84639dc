import Synchronization
import TokenetRPC

/// What a node runs towards its peers: the channels it opened (`NodeContext.channel(to:)`) and the background
/// tasks that use them (its notification subscription, the issuer's registration with the TSP, the issuer app's
/// link to the wallet).
///
/// A stopping node ends them itself, so that its peers see a call cancelled and a connection closed with a goaway and
/// TLS close_notify. Left to the process's exit they were cut mid-stream: the TSP logged each restart of a wallet as
/// a connection problem ("closed by peer without TLS close_notify"), and the wallet logged the failure of its own
/// subscription after its "stopped" line.
public final class NodeOutgoing: Sendable {
    private struct State {
        var channels: [RPCChannel] = []
        var tasks: [Task<Void, Never>] = []
        /// Work asked for before `startHeld()`: nil once it was called (or when nothing is held).
        var held: [@Sendable () async -> Void]?
        var stopping = false
        /// The peers (by the channel's description) a channel last found unreachable, with the kind of reason
        /// logged (`RPCChannel.LinkChange`; nil while only attempts cut short by their calls were seen).
        var unreachable: [String: Unreachable] = [:]
    }

    /// A peer found unreachable: the kind of reason logged, and whether it was said only as a peer not up yet.
    private struct Unreachable {
        var kind: String?
        var early: Bool
        /// The reason last reported.
        var reason = ""
    }

    /// What a link change calls for in the log (`news(_:peer:)`).
    public enum LinkNews: Sendable, Equatable {
        /// Nothing: the same as what was said.
        case none
        /// The peer cannot be reached: a warning.
        case unreachable
        /// The peer cannot be reached yet, while the node starts: parties started together wait for each other,
        /// and a warning for a peer still creating its database read as a fault.
        case notYetReachable
        /// The peer was reached after it could not be (`afterStart`: it was only not up yet when the node started).
        case reachable(afterStart: Bool)
    }

    private let state: Mutex<State>
    /// When the node started, and how long after it an unreachable peer is taken as one still starting.
    private let startedAt = ContinuousClock.now
    private let startupGrace: Duration

    /// With `holdingUntilStarted`, background work asked for is held until `startHeld()`: a node builds its
    /// services (which ask for their subscriptions and registrations) before it binds its port, and one whose bind
    /// then failed had already taken notifications from the TSP's queue and acknowledged them, lost to the node on
    /// that data directory that was still running, and registered its key with the TSP in another's place.
    ///
    /// Within `startupGrace` of its creation, a peer that cannot be connected to is said as one not up yet (an
    /// info line); the warning comes if it still cannot be once the grace is over. A refusal (a certificate, a
    /// role) is a warning at once.
    public init(holdingUntilStarted: Bool = false, startupGrace: Duration = .zero) {
        state = Mutex(State(held: holdingUntilStarted ? [] : nil))
        self.startupGrace = startupGrace
    }

    /// Starts the work held until now, and from now on runs new work at once; nothing when the node is stopping.
    public func startHeld() {
        state.withLock { state in
            guard let held = state.held else { return }
            state.held = nil
            guard !state.stopping else { return }
            for body in held { state.tasks.append(Task { await body() }) }
        }
    }

    /// Whether the node has begun to stop its outgoing work (then `run` starts nothing new).
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Whether a link change of one of the channels to `peer` is news: a node has more than one channel to a peer
    /// (its calls, and its notification subscription, to the TSP), and each said the same "cannot reach" and
    /// "reached again", so every line came twice. Another kind of reason while the peer stays unreachable is news
    /// too (a TSP that was down comes back with a certificate this node refuses).
    public func news(
        _ change: RPCChannel.LinkChange, peer: String, now: ContinuousClock.Instant = .now
    ) -> LinkNews {
        let starting = isStarting(at: now)
        return state.withLock { state in
            switch change {
            case .unreachable(let reason, let kind):
                // Cannot connect (or cut short by its call), as a peer that is not up yet: not a refusal.
                let notUp = kind == nil || kind == RPCChannel.unreachableKind
                guard let logged = state.unreachable[peer] else {
                    let early = starting && notUp
                    state.unreachable[peer] = Unreachable(kind: kind, early: early, reason: reason)
                    return early ? .notYetReachable : .unreachable
                }
                if logged.early, !starting || !notUp {
                    // Still unreachable once the start is over, or refused: now it is a warning.
                    state.unreachable[peer] = Unreachable(kind: kind ?? logged.kind, early: false, reason: reason)
                    return .unreachable
                }
                // A reason of its own after attempts cut short by their calls (no kind) is news too.
                guard let kind else { return .none }
                state.unreachable[peer] = Unreachable(kind: kind, early: logged.early, reason: reason)
                return logged.kind != kind && !logged.early ? .unreachable : .none
            case .reachable:
                guard let logged = state.unreachable.removeValue(forKey: peer) else { return .none }
                return .reachable(afterStart: logged.early)
            }
        }
    }

    /// Whether the node is within `startupGrace` of its start, when a peer it cannot reach may still be starting.
    public var isStarting: Bool { isStarting(at: .now) }

    private func isStarting(at now: ContinuousClock.Instant) -> Bool { now - startedAt < startupGrace }

    /// The reason a peer said only as "not reachable yet" still stands for, once the start is over: the channel
    /// reports a failure again only when its kind changes, so a peer that never came up would never be warned of.
    /// Nil when the peer was reached meanwhile, or already warned of; the peer then counts as warned of.
    /// The reason is the latest failed attempt's among the channels to `peer` (a node has more than one: its calls
    /// and its notification subscription), when one has failed since: the first one's may no longer hold (refused
    /// while the peer started to listen, then no handshake from a peer that hangs).
    public func stillUnreachableAfterStart(_ peer: String) -> String? {
        let (stillUnreachable, channels) = state.withLock { state -> (String?, [RPCChannel]) in
            guard var logged = state.unreachable[peer], logged.early else { return (nil, []) }
            logged.early = false
            state.unreachable[peer] = logged
            return (logged.reason, state.channels)
        }
        guard let stillUnreachable else { return nil }
        let latest = channels.filter { $0.peerName == peer }.compactMap(\.lastFailure).max { $0.at < $1.at }
        return latest?.reason ?? stillUnreachable
    }

    /// When the start is over (`startupGrace` after the node's creation).
    public var startEndsAt: ContinuousClock.Instant { startedAt + startupGrace }

    /// Closes `channel` when the node stops.
    public func track(_ channel: RPCChannel) {
        state.withLock { $0.channels.append(channel) }
    }

    /// Runs `body` in a task of its own, which is cancelled when the node stops; once it is stopping, nothing new
    /// starts. While work is held (`init(holdingUntilStarted:)`), it starts at `startHeld()`.
    public func run(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.stopping else { return }
            if state.held != nil {
                state.held?.append(body)
            } else {
                state.tasks.append(Task { await body() })
            }
        }
    }

    /// How many background tasks were started (held work not counted until `startHeld()`).
    var startedTaskCount: Int { state.withLock { $0.tasks.count } }

    /// Cancels the background tasks: the first step of a stop, taken beside the drain of the calls the node serves
    /// (those may still call peers, so the channels stay open until `close(within:)`).
    public func cancelTasks() {
        let tasks = state.withLock { state in
            state.stopping = true
            state.held = nil
            return state.tasks
        }
        for task in tasks { task.cancel() }
    }

    /// Cancels the background tasks, waits for them to end, then closes every channel (goaway; calls still open may
    /// finish), all within `limit`. False when the limit passed first: what is left is cut when the event loop stops.
    @discardableResult
    public func close(within limit: Duration) async -> Bool {
        cancelTasks()
        let (tasks, channels) = state.withLock { ($0.tasks, $0.channels) }
        return await waitAtMost(limit) {
            for task in tasks { await task.value }
            await withTaskGroup(of: Void.self) { group in
                for channel in channels { group.addTask { await channel.close() } }
            }
        }
    }
}
