import Synchronization

/// Lets one line of a kind through per interval and counts the ones it holds back, so that the next line can say
/// how many there were.
///
/// A listener reports every failed accept and every refused handshake. A node out of file descriptors retries its
/// accept ten times a second, and a scanner can open connections as fast as it likes: one line each would fill the
/// log (and the disk) with the same words, and push out the lines an operator needs.
public final class LogThrottle: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var heldBack = 0
    }

    private let interval: Duration
    private let state = Mutex(State())

    public init(interval: Duration = .seconds(1)) {
        self.interval = interval
    }

    /// Whether a line may be written now; when it may, also how many lines were held back since the last one.
    public func admit(at now: ContinuousClock.Instant = .now) -> (admitted: Bool, heldBack: Int) {
        state.withLock { state in
            if let last = state.lastLine, now - last < interval {
                state.heldBack += 1
                return (false, 0)
            }
            let heldBack = state.heldBack
            state.lastLine = now
            state.heldBack = 0
            return (true, heldBack)
        }
    }
}

extension Logger {
    /// Logs `message` with its `error` at info through `throttle`: the line is dropped when one went out less than
    /// the throttle's interval ago, and the next line that goes out says how many were dropped (`not_shown`).
    /// A `peer` goes on the line too (the one a refusal names).
    public func info(
        _ message: String, error: String, peer: String? = nil, throttledBy throttle: LogThrottle,
        at now: ContinuousClock.Instant = .now
    ) {
        let (admitted, heldBack) = throttle.admit(at: now)
        guard admitted else { return }
        switch (peer, heldBack > 0) {
        case (let peer?, true): info(message, ["peer": peer, "error": error, "not_shown": String(heldBack)])
        case (let peer?, false): info(message, ["peer": peer, "error": error])
        case (nil, true): info(message, ["error": error, "not_shown": String(heldBack)])
        case (nil, false): info(message, ["error": error])
        }
    }
}
