import Foundation

/// Notices that the process that started a node (`--parent-pid`) has ended, so the node stops as on SIGTERM instead
/// of running on unowned: `tokenet demo`, `scenario` and `up` stop their nodes themselves, but cannot when they are
/// killed with SIGKILL.
///
/// A thread polls twice a second. While the node is that process's child, its parent changing says the process has
/// ended (even before it is reaped, when `kill(pid, 0)` would still find its zombie); otherwise the process no longer
/// existing says so.
enum ParentWatch {
    static let interval: useconds_t = 500_000

    static func start(_ parent: Int32, onEnd: @escaping @Sendable () -> Void) {
        let wasChild = getppid() == parent
        let thread = Thread {
            while !ended(parent, wasChild: wasChild) { usleep(interval) }
            onEnd()
        }
        thread.name = "parent-watch"
        thread.start()
    }

    static func ended(_ parent: Int32, wasChild: Bool) -> Bool {
        if wasChild { return getppid() != parent }
        return kill(parent, 0) != 0 && errno == ESRCH
    }
}
