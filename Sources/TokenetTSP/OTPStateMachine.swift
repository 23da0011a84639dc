/// The one-time-code part of ID&V for one token, as a pure state machine: no I/O, no clock, no randomness. The
/// driver generates a candidate code, passes its digest in, delivers the code only when told to, and persists
/// `challenge` (which holds the digest, never the code).
///
/// ```
/// (none)   --select--> PENDING        code issued: deliver it
/// PENDING  --select--> PENDING        the same code, same expiry: asking again neither regenerates nor extends it
/// PENDING  --select--> PENDING        another OTP method, or the code expired: a new code by the method selected
///                                     now, using up a resend (none left: the code out stands)
/// PENDING  --deliveryFailed--> before   the code reached no one: back to none (first code) or the code it replaced
///                                     (a delivery whose answer was lost keeps the new code, and the driver passes
///                                     the replaced one to submit as `earlier`: the cardholder may hold either)
/// PENDING  --resend--> PENDING        a new code, a new expiry and fresh tries, while resends are left
/// PENDING  --submit--> VERIFIED       the right code before it expires: the driver activates the token
/// PENDING  --submit--> PENDING        a wrong code with tries left, or an expired code (no try is used)
/// PENDING  --submit--> LOCKED         the last try was wrong: final, another ID&V method must be used
/// ```
///
/// A token gets at most `1 + maxResends` codes, whether a resend or a select after expiry asks for them: once the
/// last has expired, select and resend are refused with `codesExhausted`, which tells the cardholder the way out
/// (another method, or adding the card again) instead of sending them round between select and resend.
struct OTPStateMachine: Sendable, Equatable {
    /// How long a code lives and how many tries and resends the cardholder gets.
    struct Policy: Sendable, Equatable {
        var maxAttempts = 3
        var validityMs: UInt64 = 10 * 60 * 1000
        var maxResends = 3
    }

    enum Status: String, Sendable, Equatable, Codable {
        case pending
        case verified
        case locked
    }

    /// The code sent for a token, as stored: the digest of the code, never the code.
    struct Challenge: Sendable, Equatable, Codable {
        var methodID: String
        var codeDigest: [UInt8]
        var expiresAtMs: UInt64
        var attemptsLeft: Int
        var resendsLeft: Int
        var status: Status
    }

    /// Why an event cannot be applied; the state did not change.
    enum Refusal: Sendable, Equatable, CustomStringConvertible {
        case noCodeSent
        case alreadyVerified
        case retriesExceeded
        case resendsExhausted
        /// Every code the token may get was sent and the last one expired unused.
        case codesExhausted(codes: Int)

        var description: String {
            switch self {
            case .noCodeSent: "no code was sent for this token; select an OTP method first"
            case .alreadyVerified: "the code for this token was already verified"
            case .retriesExceeded: "too many incorrect codes; use another verification method"
            case .resendsExhausted:
                "no more codes can be sent for this token; enter the code sent, which is still valid, or use another "
                    + "verification method"
            case .codesExhausted(let codes):
                "the last of the \(codes) one-time codes this token may get has expired and no more can be sent; "
                    + "verify the cardholder another way, or delete the card and add it again"
            }
        }
    }

    /// What `select` and `resend` tell the driver to do.
    enum DeliveryAction: Sendable, Equatable {
        /// Deliver the candidate code through `methodID`; it is valid until `expiresAtMs`.
        case deliver(methodID: String, expiresAtMs: UInt64)
        /// A code is already out; nothing is sent and nothing changes. `resendsLeft` says whether the cardholder may
        /// still ask for another.
        case alreadySent(methodID: String, expiresAtMs: UInt64, attemptsLeft: Int, resendsLeft: Int)
        case refused(Refusal)
    }

    /// What `submit` found.
    enum SubmitResult: Sendable, Equatable {
        /// The code is right: the driver activates the token.
        case success
        case incorrectCode(attemptsLeft: Int)
        case retriesExceeded
        case expiredCode
        case refused(Refusal)
    }

    let policy: Policy
    private(set) var challenge: Challenge?

    init(policy: Policy = Policy(), challenge: Challenge? = nil) {
        self.policy = policy
        self.challenge = challenge
    }

    /// The cardholder picks an OTP method. The first pick issues a code; picking the same method again reports the
    /// code out. A pick of another method, or any pick once the code has expired, issues a new code by the method
    /// picked now from the resends left, in place of the one out: a cardholder whose phone number is out of date
    /// picks e-mail and gets a code there, and one whose code expired picks the method again, as the wallet app
    /// offers, and is not left to find the resend. Another method with no resend left reports the code out.
    mutating func select(methodID: String, candidateDigest: [UInt8], nowMs: UInt64) -> DeliveryAction {
        guard let current = challenge else {
            challenge = Challenge(
                methodID: methodID, codeDigest: candidateDigest, expiresAtMs: nowMs + policy.validityMs,
                attemptsLeft: policy.maxAttempts, resendsLeft: policy.maxResends, status: .pending)
            return .deliver(methodID: methodID, expiresAtMs: nowMs + policy.validityMs)
        }
        switch current.status {
        case .verified: return .refused(.alreadyVerified)
        case .locked: return .refused(.retriesExceeded)
        case .pending:
            let another = methodID != current.methodID && current.resendsLeft > 0
            guard nowMs < current.expiresAtMs, !another else {
                return replace(current, methodID: methodID, candidateDigest: candidateDigest, nowMs: nowMs)
            }
            return .alreadySent(
                methodID: current.methodID, expiresAtMs: current.expiresAtMs, attemptsLeft: current.attemptsLeft,
                resendsLeft: current.resendsLeft)
        }
    }

    /// The code `digest` reached no one (the issuer could not deliver it): the challenge goes back to `previous`,
    /// what it was before that code was issued. For a first code that is none, so the next select issues and
    /// delivers one instead of reporting a code out that nobody received; for a resend it is the code it replaced,
    /// with its tries, and the resend is not used up. A challenge whose code was replaced meanwhile is left alone.
    mutating func deliveryFailed(digest: [UInt8], previous: Challenge?) {
        guard let current = challenge, current.status == .pending, current.codeDigest == digest else { return }
        challenge = previous
    }

    /// The cardholder asks for a new code: replaces the old one, with a new expiry and fresh tries.
    mutating func resend(candidateDigest: [UInt8], nowMs: UInt64) -> DeliveryAction {
        guard let current = challenge else { return .refused(.noCodeSent) }
        switch current.status {
        case .verified: return .refused(.alreadyVerified)
        case .locked: return .refused(.retriesExceeded)
        case .pending:
            return replace(current, methodID: current.methodID, candidateDigest: candidateDigest, nowMs: nowMs)
        }
    }

    /// A new code in place of the pending one, by `methodID`, while resends are left. Without one left the refusal
    /// says whether the code out can still be entered (`resendsExhausted`) or no code ever can (`codesExhausted`).
    private mutating func replace(
        _ pending: Challenge, methodID: String, candidateDigest: [UInt8], nowMs: UInt64
    ) -> DeliveryAction {
        guard pending.resendsLeft > 0 else {
            return .refused(
                nowMs < pending.expiresAtMs ? .resendsExhausted : .codesExhausted(codes: policy.maxResends + 1))
        }
        var current = pending
        current.resendsLeft -= 1
        current.methodID = methodID
        current.codeDigest = candidateDigest
        current.expiresAtMs = nowMs + policy.validityMs
        current.attemptsLeft = policy.maxAttempts
        challenge = current
        return .deliver(methodID: methodID, expiresAtMs: current.expiresAtMs)
    }

    /// The cardholder submits a code (as its digest). An expired code uses no try. `earlier` are the codes resends
    /// replaced when the resends' delivery is uncertain (the issuer's answer was lost, so the new code may never have
    /// reached the cardholder): each is right too until its own expiry, and a wrong code uses one of the current
    /// code's tries.
    mutating func submit(digest: [UInt8], nowMs: UInt64, earlier: [Challenge] = []) -> SubmitResult {
        guard var current = challenge else { return .refused(.noCodeSent) }
        switch current.status {
        case .verified: return .refused(.alreadyVerified)
        case .locked: return .retriesExceeded
        case .pending: break
        }
        guard nowMs < current.expiresAtMs else { return .expiredCode }
        let earlierMatches = earlier.contains {
            $0.status == .pending && nowMs < $0.expiresAtMs && Self.constantTimeEqual(digest, $0.codeDigest)
        }
        if Self.constantTimeEqual(digest, current.codeDigest) || earlierMatches {
            current.status = .verified
            challenge = current
            return .success
        }
        current.attemptsLeft -= 1
        if current.attemptsLeft <= 0 {
            current.attemptsLeft = 0
            current.status = .locked
            challenge = current
            return .retriesExceeded
        }
        challenge = current
        return .incorrectCode(attemptsLeft: current.attemptsLeft)
    }

    /// Compares digests without stopping at the first difference, so timing tells nothing about the code.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
