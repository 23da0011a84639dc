import CTokenetShims
import Foundation
import Synchronization
import TokenetTransport

/// The process's one receiver of stop signals, set up by the first `StopSignalWatcher`.
///
/// Its handler takes effect before the first watcher's init returns. Its thread is the only one that accepts the
/// signals in a node (which holds them back everywhere else from its first line: `holdStopSignals`), so a signal
/// pending since start-up is taken as soon as the thread runs. In a process that holds nothing back (the CLI) the
/// handler runs on whichever thread the kernel picks, and the pipe brings the signal to this thread all the same.
final class StopSignalRelay: Sendable {
    static let shared = StopSignalRelay()

    private struct Watchers {
        var nextID: UInt64 = 0
        var callbacks: [UInt64: @Sendable (Int32) -> Void] = [:]
    }

    private let watchers = Mutex(Watchers())
    private let readEnd: Int32
    private let started = Atomic<Bool>(false)

    private init() {
        let readEnd = StopSignalWatcher.stopSignals.withUnsafeBufferPointer { numbers in
            ctk_stop_signals_install(numbers.baseAddress, Int32(numbers.count))
        }
        guard readEnd >= 0 else {
            fatalError("cannot install the stop-signal handler: \(String(cString: strerror(errno)))")
        }
        self.readEnd = readEnd
    }

    func add(_ callback: @escaping @Sendable (Int32) -> Void) -> UInt64 {
        let id = watchers.withLock { watchers in
            defer { watchers.nextID += 1 }
            watchers.callbacks[watchers.nextID] = callback
            return watchers.nextID
        }
        if !started.exchange(true, ordering: .acquiringAndReleasing) { startThread() }
        return id
    }

    /// Started once the first watcher is in place, so that a signal pending since start-up has someone to tell.
    private func startThread() {
        let readEnd = readEnd
        NamedThread.start("tokenet-signals") { [self] in
            // Threads inherit the mask of the thread that starts them: a node's are held back, and this one
            // must accept them.
            var set = StopSignalWatcher.stopSignalSet
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    deliver(Int32(byte))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    func remove(_ id: UInt64) {
        _ = watchers.withLock { $0.callbacks.removeValue(forKey: id) }
    }

    private func deliver(_ number: Int32) {
        let callbacks = watchers.withLock { Array($0.callbacks.values) }
        for callback in callbacks { callback(number) }
    }
}
