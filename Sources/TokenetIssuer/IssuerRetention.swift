/// How long the issuer keeps what has ended, so that neither its memory nor its database grows with every payment
/// or enrolment: the app's authentication requests (AUTHN) once they ended, strong-authentication enrolments once
/// their activation code expired, and (with a retention of its own) outbox messages once they were sent and the code
/// they carry expired. Pure: times in, decisions out.
///
/// A request ends when the cardholder's answer is recorded, or at its expiry (the TSP refuses an answer after it)
/// if that comes first; an AUTHN message without an expiry is taken to live `defaultLifetimeMs` from its receipt.
/// An ended request stays listed (with its outcome, which also makes the app refuse a second answer) for `keep`,
/// then it is pruned.
public struct IssuerRetention: Sendable, Equatable {
    /// A week, like the TSP's notification queues: long enough for operators to read outcomes in the app's listing.
    public static let defaultKeep: Duration = .seconds(7 * 24 * 3600)
    /// The TSP's default lifetime of an authentication request (`TSPConfiguration.authnLifetime`, `authn_ttl_s`).
    public static let defaultLifetimeMs: UInt64 = 5 * 60 * 1000
    /// The longest time between two prunings of a running node.
    public static let longestSweepInterval: Duration = .seconds(3600)

    /// How long an ended request is kept.
    public var keep: Duration

    public init(keep: Duration = Self.defaultKeep) {
        self.keep = max(.zero, keep)
    }

    var keepMs: UInt64 {
        let (seconds, attoseconds) = keep.components
        return UInt64(max(0, seconds)) * 1000 + UInt64(max(0, attoseconds) / 1_000_000_000_000_000)
    }

    /// How often a running node prunes: every hour, or as often as the retention if that is shorter (at least each
    /// second), so a request is gone at most that long after its retention ran out.
    public var sweepInterval: Duration {
        min(Self.longestSweepInterval, max(.seconds(1), keep))
    }

    /// When a request received at `receivedAtMs` ends if nobody answers it.
    public static func endsAtMs(expiresAtMs: UInt64, receivedAtMs: UInt64) -> UInt64 {
        expiresAtMs != 0 ? expiresAtMs : receivedAtMs + defaultLifetimeMs
    }

    /// When a request that would end at `endsAtMs` ends once answered at `answeredAtMs`.
    public static func endsAtMs(_ endsAtMs: UInt64, answeredAtMs: UInt64) -> UInt64 {
        min(endsAtMs, answeredAtMs)
    }

    /// The longest lifetime the TSP gives an activation code (its `activation_code_ttl_s` is at most a week): an
    /// enrolment whose expiry is unknown (recorded before schema 12, or answered without one) is taken to end that
    /// long after it was made, so none is pruned while its code may still activate.
    public static let longestActivationLifetimeMs: UInt64 = 7 * 24 * 3600 * 1000

    /// When an enrolment made at `createdAtMs` can no longer be used: at its activation code's expiry (the TSP
    /// refuses the code from then on, and once used it refuses it anyway), or `longestActivationLifetimeMs` after it
    /// was made when the expiry is unknown (0). Its reference id is read only to activate with that code.
    public static func enrolmentEndsAtMs(expiresAtMs: UInt64, createdAtMs: UInt64) -> UInt64 {
        expiresAtMs != 0 ? expiresAtMs : createdAtMs + longestActivationLifetimeMs
    }

    /// When an outbox message sent at `sentAtMs` is no longer needed: once it was sent and the code it carries (a
    /// one-time code for ID&V, an activation code) expired at `codeExpiresAtMs`, so none is pruned while its code can
    /// still be used; `longestActivationLifetimeMs` after it was sent when that expiry is unknown (0), as for the
    /// messages recorded before schema 13.
    public static func outboxMessageEndsAtMs(codeExpiresAtMs: UInt64, sentAtMs: UInt64) -> UInt64 {
        codeExpiresAtMs != 0 ? max(codeExpiresAtMs, sentAtMs) : sentAtMs + longestActivationLifetimeMs
    }

    /// Requests that ended at or before this time are pruned at `nowMs`; nil when none can be (the node's clock is
    /// earlier than the retention itself).
    public func cutoffMs(nowMs: UInt64) -> UInt64? {
        nowMs >= keepMs ? nowMs - keepMs : nil
    }

    /// Whether a request that ended (or ends) at `endsAtMs` is pruned at `nowMs`.
    public func prunes(endsAtMs: UInt64, nowMs: UInt64) -> Bool {
        cutoffMs(nowMs: nowMs).map { endsAtMs <= $0 } ?? false
    }
}
