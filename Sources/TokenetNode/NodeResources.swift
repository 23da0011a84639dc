import Synchronization

/// What a node closes last when it stops: its database, once no call and no background task can use it any more.
///
/// A node exits with `exit(0)`, which runs no deinitialiser: a database left open was never closed, so SQLite never
/// checkpointed its write-ahead log, and after a clean stop the data lived only in the `-wal` file beside a main file
/// of a few kilobytes (a copy of the main file alone, or a lost `-wal`, lost it all). Closed here, the log is folded
/// into the main file and removed.
public final class NodeResources: Sendable {
    private struct Resource: Sendable {
        var name: String
        var close: @Sendable () throws -> Void
    }

    private let resources = Mutex<[Resource]>([])
    private let callsEndedActions = Mutex<[@Sendable () -> Void]>([])

    public init() {}

    /// Runs `close` when the node stops, after its calls and background tasks ended; `name` is for the log.
    public func closeWhenStopped(_ name: String, _ close: @escaping @Sendable () throws -> Void) {
        resources.withLock { $0.append(Resource(name: name, close: close)) }
    }

    /// Runs `body` when the node stops, once its connections have ended and before it waits for the handlers of
    /// the calls they cancelled: a database refuses the changes not yet begun (`Database.refuseChanges`), which no
    /// caller waits for any more.
    public func whenCallsEnd(_ body: @escaping @Sendable () -> Void) {
        callsEndedActions.withLock { $0.append(body) }
    }

    /// Runs what `whenCallsEnd` registered, each once.
    public func callsEnded() {
        let actions = callsEndedActions.withLock { actions in
            defer { actions.removeAll() }
            return actions
        }
        for action in actions { action() }
    }

    /// Closes everything registered, newest first (each once); a failure is logged and the others are still closed.
    public func closeAll(logger: Logger) {
        let all = resources.withLock { resources in
            defer { resources.removeAll() }
            return resources
        }
        for resource in all.reversed() {
            do {
                try resource.close()
            } catch {
                logger.error("cannot close \(resource.name)", ["error": "\(error)"])
            }
        }
    }
}
