import Foundation
import Synchronization
import TokenetTransport

/// Notices that nobody reads standard output any more: the reader of a pipe exited (`tokenet call … | head -1`).
///
/// The CLI ignores SIGPIPE and EPIPE (a reader that stops early is not an error), so without this a stream that
/// never ends by itself (a health watch, a subscription) would keep the command, and the shell's pipeline, waiting
/// forever for output that nobody will read.
final class StandardOutputReader: Sendable {
    private let state = Mutex<(finished: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))

    private init() {}

    /// Returns once standard output reports an error or a hang-up (for a pipe: its last reader closed it), or when the
    /// calling task is cancelled. For output that never reports one (a file, a terminal) it returns only on
    /// cancellation; a closed descriptor is left to the writes, which report it as a failure.
    static func departure() async {
        let watch = StandardOutputReader()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = watch.state.withLock { state in
                    if !state.finished { state.continuation = continuation }
                    return !state.finished
                }
                guard waiting else { return continuation.resume() }
                // poll(2) blocks, so it gets a thread of its own; it wakes every 200 ms to see whether the wait was
                // cancelled, so the thread does not outlive the stream by more than that.
                NamedThread.start("tokenet-stdout-watch") { watch.watch() }
            }
        } onCancel: {
            watch.finish()
        }
    }

    private func watch() {
        var entry = pollfd(fd: 1, events: 0, revents: 0)
        while !state.withLock({ $0.finished }) {
            let ready = poll(&entry, 1, 200)
            // An error other than an interruption would recur at once; the writes are left to report it.
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            if entry.revents & Int16(POLLNVAL) != 0 { return }
            if entry.revents & Int16(POLLERR | POLLHUP) != 0 { break }
        }
        finish()
    }

    /// Resumes the waiting task once, whichever of the watching thread and cancellation comes first.
    private func finish() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
