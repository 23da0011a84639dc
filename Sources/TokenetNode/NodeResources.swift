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

    public init() {}

    /// Runs `close` when the node stops, after its calls and background tasks ended; `name` is for the log.
    public func closeWhenStopped(_ name: String, _ close: @escaping @Sendable () throws -> Void) {
        resources.withLock { $0.append(Resource(name: name, close: close)) }
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
