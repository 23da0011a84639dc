import Foundation
import Synchronization
import TokenetNode

/// Ctrl-C (or SIGTERM, SIGHUP) while `list`, `describe`, `call` or a party command talks to a node.
///
/// The command's work is cancelled, which cancels its call on the node too (a `Watch` or a slow unary call ends
/// there as CANCELLED, its handler stopped), and the connection then closes in order, with a goaway and TLS's
/// close_notify, within `InspectSession.closeLimit`. Then the command dies by the same signal, as the shell expects
/// of an interrupted program: a script running it stops too. Dying on the spot, as before, left the node to log the
/// connection's end as a problem ("unexpected eof while reading"). A second signal ends the command at once.
final class CommandInterruption: Sendable {
    private struct State {
        var signal: Int32?
        var work: Task<Void, Never>?
    }

    /// A class, so that the signal's callback can share it.
    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    private let watcher: StopSignalWatcher

    init() {
        let shared = shared
        watcher = StopSignalWatcher { number in
            let first = shared.state.withLock { state -> Task<Void, Never>?? in
                guard state.signal == nil else { return .none }
                state.signal = number
                return .some(state.work)
            }
            switch first {
            case .none: Self.die(by: number)
            case .some(let work): work?.cancel()
            }
        }
    }

    deinit { watcher.cancel() }

    /// The stop signal that arrived, if one did.
    var received: Int32? { shared.state.withLock { $0.signal } }

    /// Runs `work` in a task that the first stop signal cancels, and returns its result.
    func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T {
        let result = Mutex<T?>(nil)
        let task = Task {
            let value = await work()
            result.withLock { $0 = value }
        }
        let cancelled = shared.state.withLock { state in
            state.work = task
            return state.signal != nil
        }
        if cancelled { task.cancel() }
        await task.value
        return result.withLock { $0! }
    }

    /// Ends the process by `number` with its default action, so that its parent sees it killed by that signal
    /// (a shell reports 128 + the number, and a script stops as it would for any interrupted command).
    static func die(by number: Int32) -> Never {
        Foundation.signal(number, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        kill(getpid(), number)
        // The signal is delivered before kill(2) returns to a thread that does not block it; this is a fallback.
        exit(128 + number)
    }
}
