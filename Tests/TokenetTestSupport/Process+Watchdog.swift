import Foundation

extension Process {
    /// Waits for the process; one that outlives `limit` seconds is killed, so a hung child fails its test (its
    /// termination reason becomes `.uncaughtSignal`) instead of hanging the suite.
    public func waitUntilExit(killingAfter limit: Double) {
        let pid = processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        waitUntilExit()
        watchdog.cancel()
    }
}
