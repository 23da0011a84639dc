import Foundation
import TokenetTransport

/// The bound on a node's stop: once a stop signal was taken, the process exits within the drain timeout plus
/// `grace`, whatever holds the stop up.
///
/// The stop itself is bounded step by step (the drain by `--drain-timeout`, closing connections within a second),
/// but a step outside those bounds could still hold it for good: a log line written to a pipe nobody reads blocks
/// until someone does, and an operator or a supervisor waiting for the exit would wait with it. Past the bound the
/// process ends at once with status 1, saying so on stderr when stderr can take the line without blocking; the
/// databases need no closing for that (SQLite keeps what was committed).
enum StopDeadline {
    static let grace: Duration = .seconds(10)

    /// Starts the clock on its own thread. The line is rendered only if the time runs out, and written without the
    /// logger's lock, which the stuck thread may hold.
    static func arm(after limit: Duration, node: String, format: LogFormat) {
        NamedThread.start("tokenet-stop-deadline") {
            let (seconds, attoseconds) = limit.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            let record = LogRecord(
                timestamp: Date(), level: .error, node: node,
                message: "the stop did not finish in time; exiting without it", traceID: nil,
                fields: [LogField("after", "\(limit)")])
            writeIfItDoesNotBlock(record.rendered(as: format) + "\n")
            _exit(1)
        }
    }

    /// Writes `line` (shorter than PIPE_BUF, so a pipe with room takes it whole) to stderr only if stderr is ready.
    private static func writeIfItDoesNotBlock(_ line: String) {
        var descriptor = pollfd(fd: 2, events: Int16(POLLOUT), revents: 0)
        guard poll(&descriptor, 1, 0) == 1, descriptor.revents & Int16(POLLOUT) != 0 else { return }
        var bytes = Array(line.utf8.prefix(512))
        _ = write(2, &bytes, bytes.count)
    }
}
