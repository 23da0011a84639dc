import Foundation
import Synchronization
import TokenetTransport

/// Lets one line of a kind through per interval and counts the ones it holds back, so that a line can say how many
/// there were: the next line let through, or, when none comes, the last one held back, written once the interval
/// has passed.
///
/// A listener reports every failed accept and every refused handshake. A node out of file descriptors retries its
/// accept ten times a second, and a scanner can open connections as fast as it likes: one line each would fill the
/// log (and the disk) with the same words, and push out the lines an operator needs. A burst that ended, though,
/// must not leave its count unsaid until the next failure of its kind, which may be hours later or never.
public final class LogThrottle: Sendable {
    /// Writes a line, told how many others it stands for.
    public typealias Line = @Sendable (_ notShown: Int) -> Void

    private struct State {
        var lastLine: ContinuousClock.Instant?
        var heldBack = 0
        /// The newest line held back, written by the flush if no line goes out before it.
        var latest: Line?
        /// A flush is armed for the end of the interval.
        var flushArmed = false
        /// The node stops (`flushHeldBack`): every line goes out, since a flush armed now would come too late.
        var stopped = false
    }

    private let interval: Duration
    private let state = Mutex(State())

    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether a line may be written now; when it may, also how many lines were held back since the last one.
    public func admit(at now: ContinuousClock.Instant = .now) -> (admitted: Bool, heldBack: Int) {
        state.withLock { state in admit(at: now, &state) }
    }

    /// Writes `line` now when one may be written, telling it how many were held back since the last; otherwise holds
    /// it back, and once the interval has passed writes the newest line held back, with the count of the others,
    /// unless a line went out in between.
    public func submit(at now: ContinuousClock.Instant = .now, _ line: @escaping Line) {
        let (admitted, heldBack, flushAt) = state.withLock { state -> (Bool, Int, ContinuousClock.Instant?) in
            let (admitted, heldBack) = admit(at: now, &state)
            guard !admitted else {
                state.latest = nil
                return (true, heldBack, nil)
            }
            state.latest = line
            guard !state.flushArmed, let last = state.lastLine else { return (false, 0, nil) }
            state.flushArmed = true
            return (false, 0, last + interval)
        }
        if admitted { line(heldBack) }
        if let flushAt { armFlush(at: flushAt) }
    }

    private func admit(at now: ContinuousClock.Instant, _ state: inout State) -> (admitted: Bool, heldBack: Int) {
        if !state.stopped, let last = state.lastLine, now - last < interval {
            state.heldBack += 1
            return (false, 0)
        }
        let heldBack = state.heldBack
        state.lastLine = now
        state.heldBack = 0
        return (true, heldBack)
    }

    /// Writes the newest line held back now, with the count of the others, whatever is left of the interval, and lets
    /// every later line through: for a node that stops, whose armed flush would come after its last line (a drain's
    /// "call failed" lines lost their count and their newest line).
    public func flushHeldBack() {
        let held = state.withLock { state -> (Line, Int)? in
            state.stopped = true
            guard state.heldBack > 0, let line = state.latest else { return nil }
            let notShown = state.heldBack - 1
            state.latest = nil
            state.heldBack = 0
            state.lastLine = .now
            return (line, notShown)
        }
        if let (line, notShown) = held { line(notShown) }
    }

    /// Waits on a thread of its own, not in a sleeping task: a node out of file descriptors (the very failure this
    /// throttles) cannot make the timer a task's sleep needs, and the concurrency runtime stops the process when it
    /// cannot (a node out of descriptors died at its second "accept failed" line).
    private func armFlush(at deadline: ContinuousClock.Instant) {
        NamedThread.start("tokenet-log-flush") { [self] in
            let (seconds, attoseconds) = max(deadline - .now, .zero).components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            flush(at: .now)
        }
    }

    /// The end of an interval with lines held back: the newest goes out for them all, unless a line went out since
    /// (then its interval is waited for in turn).
    private func flush(at now: ContinuousClock.Instant) {
        enum Step {
            case write(Line, notShown: Int)
            case wait(until: ContinuousClock.Instant)
            case nothing
        }
        let step = state.withLock { state -> Step in
            guard state.heldBack > 0, let line = state.latest else {
                state.flushArmed = false
                return .nothing
            }
            if let last = state.lastLine, now - last < interval { return .wait(until: last + interval) }
            let notShown = state.heldBack - 1
            state.flushArmed = false
            state.latest = nil
            state.heldBack = 0
            state.lastLine = now
            return .write(line, notShown: notShown)
        }
        switch step {
        case .write(let line, let notShown): line(notShown)
        case .wait(let deadline): armFlush(at: deadline)
        case .nothing: break
        }
    }
}

extension Logger {
    /// Logs `message` with its `error` at info through `throttle`: the line is held back when one went out less than
    /// the throttle's interval ago, and the next line that goes out (or the last one held back, at the end of the
    /// interval) says how many were not shown (`not_shown`). A `peer` goes on the line too (the one a refusal
    /// names).
    public func info(
        _ message: String, error: String, peer: String? = nil, throttledBy throttle: LogThrottle,
        at now: ContinuousClock.Instant = .now
    ) {
        log(.info, message, error: error, peer: peer, throttledBy: throttle, at: now)
    }

    /// `info(_:error:peer:throttledBy:at:)` at warning: for a failure the node itself has (out of file
    /// descriptors), which an operator filtering at warning must still see.
    public func warning(
        _ message: String, error: String, peer: String? = nil, throttledBy throttle: LogThrottle,
        at now: ContinuousClock.Instant = .now
    ) {
        log(.warning, message, error: error, peer: peer, throttledBy: throttle, at: now)
    }

    /// `info(_:error:peer:throttledBy:at:)` at error: for a failure of the node's own that every call meets while
    /// it lasts (a data directory that refuses writes), which wrote one line per call.
    public func error(
        _ message: String, error: String, peer: String? = nil, throttledBy throttle: LogThrottle,
        at now: ContinuousClock.Instant = .now
    ) {
        log(.error, message, error: error, peer: peer, throttledBy: throttle, at: now)
    }

    func log(
        _ level: LogLevel, _ message: String, error: String, peer: String?, throttledBy throttle: LogThrottle,
        at now: ContinuousClock.Instant
    ) {
        let happened = clock()
        throttle.submit(at: now) { [self] notShown in
            var fields: [LogField] = []
            // A line held back goes out up to an interval later, stamped with that moment: it says when it happened,
            // so that a timeline read from the log puts it where it belongs.
            if clock().timeIntervalSince(happened) >= 0.1 {
                fields.append(LogField("happened_at", LogTimestamp.format(happened)))
            }
            if let peer { fields.append(LogField("peer", peer)) }
            fields.append(LogField("error", error))
            if notShown > 0 { fields.append(LogField("not_shown", String(notShown))) }
            log(level, message, fields: fields)
        }
    }
}

/// One `LogThrottle` per key (a peer, a peer and a kind of problem, a queue), so that one key's lines never hide
/// another's. Bounded: past a thousand keys, the throttles start over.
public final class KeyedLogThrottles: Sendable {
    private let throttles = Mutex<[String: LogThrottle]>([:])

    public init() {}

    /// The throttle of `key`, made on first use.
    public func throttle(_ key: String) -> LogThrottle {
        throttles.withLock { throttles in
            if let throttle = throttles[key] { return throttle }
            if throttles.count >= 1_000 { throttles.removeAll() }
            let throttle = LogThrottle()
            throttles[key] = throttle
            return throttle
        }
    }

    /// Every throttle made so far (to flush their held-back lines as the node stops).
    public var all: [LogThrottle] { throttles.withLock { Array($0.values) } }
}
