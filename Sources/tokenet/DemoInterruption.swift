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
        if let number = received.number.withLock({ $0 }) {
            throw CLIError(.node, "\(Self.messagePrefix) \(StopSignalWatcher.name(of: number))")
        }
    }
}
