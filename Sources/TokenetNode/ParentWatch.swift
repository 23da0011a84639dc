import Foundation
import TokenetTransport

/// Notices that the process that started a node (`--parent-pid`) has ended, so the node stops as on SIGTERM instead
/// of running on unowned: `tokenet demo`, `scenario` and `up` stop their nodes themselves, but cannot when they are
/// killed with SIGKILL.
///
/// A thread polls twice a second. While the node is that process's child, its parent changing says the process has
/// ended (even before it is reaped, when `kill(pid, 0)` would still find its zombie); otherwise the process no longer
/// existing, or being a zombie (ended, not yet reaped by a parent of its own: `/proc/PID/stat` says `Z`), says so.
enum ParentWatch {
    static let interval: useconds_t = 500_000

    static func start(_ parent: Int32, onEnd: @escaping @Sendable () -> Void) {
        let wasChild = getppid() == parent
        NamedThread.start("tokenet-parent-watch") {
            while !ended(parent, wasChild: wasChild) { usleep(interval) }
            onEnd()
        }
    }

    /// Refuses a `--parent-pid` that names no process (a usage error, exit status 2): the watch would find it gone
    /// at once, and the node would print READY, then stop with status 0 as if all were well. A process of another
    /// user (EPERM) exists and is watched like any other.
    static func checkRunning(_ parent: Int32) throws(NodeError) {
        guard kill(parent, 0) != 0 && errno == ESRCH || isZombie(parent) else { return }
        throw NodeError(
            .usage,
            "--parent-pid \(parent): no process \(parent) is running; give the id of the process whose end should "
                + "stop this node")
    }

    static func ended(_ parent: Int32, wasChild: Bool) -> Bool {
        if wasChild { return getppid() != parent }
        return kill(parent, 0) != 0 && errno == ESRCH || isZombie(parent)
    }

    /// Whether `pid` has ended and waits to be reaped: the state after the command's name in `/proc/PID/stat`
    /// (the name, in parentheses, may hold spaces and parentheses itself, so the last `)` ends it).
    static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}
