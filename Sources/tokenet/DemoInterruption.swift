import Synchronization
import TokenetNode

/// Remembers whether tokenet itself was asked to stop (SIGINT from Ctrl-C, SIGTERM from a supervisor, SIGHUP from a
/// closed terminal).
///
/// Dying on the signal would orphan the nodes the demo started and leave its temporary directory behind; instead
/// the demo notices at its next check, stops the nodes as usual and exits with status 1.
final class DemoInterruption: Sendable {
    /// The first stop signal received; a class so the signal handler can share it.
    private final class FirstSignal: Sendable {
        let number = Mutex<Int32?>(nil)
    }

    private let received = FirstSignal()
    private let watcher: StopSignalWatcher

    init() {
        let received = self.received
        watcher = StopSignalWatcher { number in
            received.number.withLock { $0 = $0 ?? number }
        }
    }

    deinit { watcher.cancel() }

    /// How the error `check` throws begins: callers that stop quietly on an interruption look for it.
    static let messagePrefix = "interrupted by"

    /// Throws once a stop signal has arrived.
    func check() throws(CLIError) {
        if let error { throw error }
    }

    /// The error `check` throws, once a stop signal has arrived.
    var error: CLIError? {
        received.number.withLock({ $0 }).map {
            CLIError(.node, "\(Self.messagePrefix) \(StopSignalWatcher.name(of: $0))")
        }
    }

    /// Runs `work`, and ends it (cancelled) with the interruption's error when a stop signal comes first: looked for
    /// every 50 ms, so that Ctrl-C does not wait for a call (a stand-in's wait, a stream) to end by itself.
    func racing<Success: Sendable>(
        _ work: @escaping @Sendable () async -> Result<Success, CLIError>
    ) async -> Result<Success, CLIError> {
        await withTaskGroup(of: Result<Success, CLIError>?.self) { group in
            group.addTask { await work() }
            group.addTask {
                while !Task.isCancelled {
                    if let error = self.error { return .failure(error) }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            var outcome: Result<Success, CLIError>?
            while outcome == nil, let next = await group.next() { outcome = next }
            group.cancelAll()
            return outcome ?? .failure(error ?? CLIError(.node, "the call ended without an outcome"))
        }
    }
}
