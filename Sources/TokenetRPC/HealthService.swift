import Synchronization
import TokenetWire

/// The health service every node serves (`tokenet.health.v1.Health`): the node as a whole under the empty name,
/// and each of its services by fully-qualified name.
public final class HealthService: Sendable {
    public typealias Status = HealthV1.ServingStatus

    private struct State {
        var statuses: [String: Status]
        var watchers: [Int: (service: String, continuation: AsyncStream<Status>.Continuation)] = [:]
        var nextWatcher = 0
        /// Set by `markAllNotServing`: the node is draining, and a watch ends once it has said so.
        var draining = false
    }

    private let state: Mutex<State>

    /// Every service in `services`, and the node itself, start as SERVING.
    public init(services: Set<String>) {
        var statuses: [String: Status] = ["": .serving]
        for service in services { statuses[service] = .serving }
        state = Mutex(State(statuses: statuses))
    }

    /// Changes a service's status and tells its watchers.
    public func set(_ service: String, _ status: Status) {
        state.withLock { state in
            state.statuses[service] = status
            for watcher in state.watchers.values where watcher.service == service {
                watcher.continuation.yield(status)
            }
        }
    }

    /// Marks every service NOT_SERVING and ends every watch after telling it so, for a node that is draining:
    /// open watches must not hold the shutdown up. They end UNAVAILABLE, as the node's other streams do, so a
    /// watcher can tell the node going away from a watch that ended normally.
    public func markAllNotServing() {
        state.withLock { state in
            state.draining = true
            for service in state.statuses.keys { state.statuses[service] = .notServing }
            for watcher in state.watchers.values {
                watcher.continuation.yield(.notServing)
                watcher.continuation.finish()
            }
            state.watchers.removeAll()
        }
    }

    public func status(of service: String) -> Status? {
        state.withLock { $0.statuses[service] }
    }

    /// Registers Check and Watch; any peer may ask, including plaintext (debug) callers without an identity.
    public func register(on router: inout RPCRouter) {
        router.unary(HealthV1.Health.check) { [self] request, _ in
            guard let status = self.status(of: request.service) else {
                throw RPCError(.notFound, "this node does not serve \(RPCServer.shown(request.service))")
            }
            return HealthV1.HealthCheckResponse(status: status)
        }
        // A watch ends when the node drains, after it has said NOT_SERVING (`markAllNotServing`), instead of being
        // cut off before its last status could leave; then it ends UNAVAILABLE like the node's other streams.
        router.serverStreaming(HealthV1.Health.watch, endsAtShutdown: false) { [self] request, writer, _ in
            let (updates, continuation) = AsyncStream<Status>.makeStream()
            let id = self.state.withLock { state in
                let id = state.nextWatcher
                state.nextWatcher += 1
                continuation.yield(state.statuses[request.service] ?? .serviceUnknown)
                if state.draining {
                    continuation.finish()  // a watch opened during the drain says NOT_SERVING and ends
                } else {
                    state.watchers[id] = (request.service, continuation)
                }
                return id
            }
            defer { _ = self.state.withLock { $0.watchers.removeValue(forKey: id) } }
            for await status in updates {
                let response = HealthV1.HealthCheckResponse(status: status)
                // At shutdown NOT_SERVING goes only if the client has room for it: behind a client that grants no
                // window it waited, and held the node's drain, for the whole drain timeout.
                if self.state.withLock({ $0.draining }) {
                    _ = try writer.sendIfRoom(response)
                    continue
                }
                try await writer.send(response)
            }
            if self.state.withLock({ $0.draining }) {
                throw RPCError(.unavailable, RPCConnection.streamEndedByShutdown.message)
            }
        }
    }
}
