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
    /// open watches must not hold the shutdown up.
    public func markAllNotServing() {
        state.withLock { state in
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
                throw RPCError(.notFound, "this node does not serve \(request.service)")
            }
            return HealthV1.HealthCheckResponse(status: status)
        }
        // A watch ends when the node drains, after it has said NOT_SERVING (`markAllNotServing`), instead of being
        // cut off with UNAVAILABLE before its last status could leave.
        router.serverStreaming(HealthV1.Health.watch, endsAtShutdown: false) { [self] request, writer, _ in
            let (updates, continuation) = AsyncStream<Status>.makeStream()
            let id = self.state.withLock { state in
                let id = state.nextWatcher
                state.nextWatcher += 1
                state.watchers[id] = (request.service, continuation)
                continuation.yield(state.statuses[request.service] ?? .serviceUnknown)
                return id
            }
            defer { _ = self.state.withLock { $0.watchers.removeValue(forKey: id) } }
            for await status in updates {
                try await writer.send(HealthV1.HealthCheckResponse(status: status))
            }
        }
    }
}
