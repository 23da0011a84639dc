import CTokenetShims
import Foundation

/// Starts a thread that carries its name where `top -H`, `ps -L`, perf and debuggers show it.
///
/// `Thread.name` set before the start does not reach the system's thread name, and set from inside it reaches it
/// only once the starting thread has recorded which thread it made, which a new thread that runs first (a loaded
/// machine) overtakes: the thread names itself through pthread as its first step instead. The kernel keeps 15
/// bytes of a name.
public enum NamedThread {
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            Thread.current.name = name
            _ = ctk_set_current_thread_name(name)
            body()
        }
        thread.name = name
        thread.start()
    }
}
