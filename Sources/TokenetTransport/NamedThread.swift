import CTokenetShims
import Foundation

/// Starts a thread that carries its name where `top -H`, `ps -L`, perf and debuggers show it.
///
/// The thread is made with `pthread_create`, whose failure is reported: Foundation's `Thread.start()` says nothing
/// when the system cannot make the thread (an address-space limit, `ulimit -v`, or a process limit), and a node
/// that then waited for its event loop's thread to start hung at start, silent, and deaf to SIGTERM. The thread
/// names itself through pthread as its first step. The kernel keeps 15 bytes of a name.
public enum NamedThread {
    /// Starts `body` on a new detached thread named `name`; returns 0, or the error number of the failure (EAGAIN,
    /// say), in which case `body` never runs.
    @discardableResult
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) -> Int32 {
        let context = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let started = Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue()
                _ = ctk_set_current_thread_name(started.name)
                started.body()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            return result
        }
        pthread_detach(thread)
        return 0
    }

    /// What the new thread runs, handed to it through `pthread_create`'s one pointer.
    private final class ThreadBody: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
