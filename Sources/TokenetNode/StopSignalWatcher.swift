import Foundation
import Synchronization

/// Turns SIGTERM, SIGINT and SIGHUP into a callback.
///
/// SIGHUP counts as a stop: a terminal that closes under `tokenet up` or a node stops them as Ctrl-C would (nodes
/// drained, temporary directories removed) instead of killing them on the spot. A process started with SIGHUP
/// ignored (`nohup`) keeps ignoring it.
///
/// A handler installed with sigaction(2) writes the signal's number to a pipe and a thread of the process
/// (`StopSignalRelay`) calls the watchers from there, where they may log, lock and stop listeners, none of which is
/// allowed inside a handler. `DispatchSourceSignal` is not used: on Linux it sets up its handler later, on
/// libdispatch's own thread, and a node that had ignored the signal until then lost one sent meanwhile and ran on.
public final class StopSignalWatcher: Sendable {
    private let id: UInt64

    public static let stopSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    public init(onSignal: @escaping @Sendable (Int32) -> Void) {
        id = StopSignalRelay.shared.add(onSignal)
    }

    /// Stops calling this watcher; a stop signal that finds no watcher is ignored.
    public func cancel() {
        StopSignalRelay.shared.remove(id)
    }

    /// Holds the stop signals back in the calling thread and every thread it starts from now on.
    ///
    /// A node calls this first, while its main thread is its only one: a stop signal that arrives while it starts
    /// then stays pending until the relay's thread, the only one that accepts them, takes it, instead of killing
    /// the node or being lost. It also keeps the signals from interrupting the system calls of other threads.
    public static func holdStopSignals() {
        var set = stopSignalSet
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// `stopSignals` as a signal set, for the masks that hold them back and the one thread that accepts them.
    static var stopSignalSet: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in stopSignals { sigaddset(&set, number) }
        return set
    }

    /// `SIGTERM`, `SIGINT`, `SIGHUP`, or the number for anything else.
    public static func name(of number: Int32) -> String {
        switch number {
        case SIGTERM: return "SIGTERM"
        case SIGINT: return "SIGINT"
        case SIGHUP: return "SIGHUP"
        default: return "signal \(number)"
        }
    }
}
