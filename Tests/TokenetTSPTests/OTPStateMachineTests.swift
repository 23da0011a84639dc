import Testing

@testable import TokenetTSP

/// The one-time-code rules as event → result tables.
@Suite struct OTPStateMachineTests {
    typealias Machine = OTPStateMachine

    static let codeA: [UInt8] = [1, 1, 1]
    static let codeB: [UInt8] = [2, 2, 2]
    static let wrong: [UInt8] = [9, 9, 9]
    static let tenMinutes: UInt64 = 600_000

    enum Event {
        case select(String, [UInt8], at: UInt64)
        case resend([UInt8], at: UInt64)
        case submit([UInt8], at: UInt64)
    }

    enum Result: Equatable {
        case delivery(Machine.DeliveryAction)
        case submit(Machine.SubmitResult)
    }

    static func run(_ events: [Event], policy: Machine.Policy = Machine.Policy()) -> ([Result], Machine) {
        var machine = Machine(policy: policy)
        let results = events.map { event -> Result in
            switch event {
            case .select(let method, let digest, let at):
                .delivery(machine.select(methodID: method, candidateDigest: digest, nowMs: at))
            case .resend(let digest, let at): .delivery(machine.resend(candidateDigest: digest, nowMs: at))
            case .submit(let digest, let at): .submit(machine.submit(digest: digest, nowMs: at))
            }
        }
        return (results, machine)
    }

    @Test func defaultPolicyIsThreeTriesTenMinutesThreeResends() {
        #expect(Machine.Policy() == Machine.Policy(maxAttempts: 3, validityMs: Self.tenMinutes, maxResends: 3))
    }

    @Test func rightCodeSucceeds() {
        let (results, machine) = Self.run([.select("otp-sms", Self.codeA, at: 0), .submit(Self.codeA, at: 1000)])
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: Self.tenMinutes)), .submit(.success),
            ])
        #expect(machine.challenge?.status == .verified)
    }

    @Test func wrongCodesCountDownThenLock() {
        let (results, machine) = Self.run([
            .select("otp-sms", Self.codeA, at: 0), .submit(Self.wrong, at: 1), .submit(Self.wrong, at: 2),
            .submit(Self.wrong, at: 3), .submit(Self.codeA, at: 4), .resend(Self.codeB, at: 5),
            .select("otp-sms", Self.codeB, at: 6),
        ])
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: Self.tenMinutes)),
                .submit(.incorrectCode(attemptsLeft: 2)), .submit(.incorrectCode(attemptsLeft: 1)),
                .submit(.retriesExceeded), .submit(.retriesExceeded), .delivery(.refused(.retriesExceeded)),
                .delivery(.refused(.retriesExceeded)),
            ])
        #expect(machine.challenge?.status == .locked)
    }

    /// An expired code is replaced by picking a method again (by the method picked now) or by a resend, each using
    /// up a resend.
    @Test func expiredCodeUsesNoTryAndIsReplacedBySelectOrResend() {
        let (results, machine) = Self.run([
            .select("otp-email", Self.codeA, at: 0), .submit(Self.codeA, at: Self.tenMinutes),
            .submit(Self.codeA, at: Self.tenMinutes + 1), .select("otp-sms", Self.codeB, at: Self.tenMinutes + 2),
            .submit(Self.codeA, at: Self.tenMinutes + 3), .resend(Self.codeA, at: 3 * Self.tenMinutes),
            .submit(Self.codeB, at: 3 * Self.tenMinutes + 1), .submit(Self.codeA, at: 3 * Self.tenMinutes + 2),
        ])
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-email", expiresAtMs: Self.tenMinutes)), .submit(.expiredCode),
                .submit(.expiredCode), .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 2 * Self.tenMinutes + 2)),
                .submit(.incorrectCode(attemptsLeft: 2)),
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 4 * Self.tenMinutes)),
                .submit(.incorrectCode(attemptsLeft: 2)), .submit(.success),
            ])
        #expect(machine.challenge?.resendsLeft == 1)
    }

    /// A token gets 1 + maxResends codes, whether resends or picks after expiry ask for them. Without a resend left
    /// a code still valid can be entered (resendsExhausted); once it has expired, no code ever can, and select and
    /// resend both say so (codesExhausted) instead of pointing at each other.
    @Test func codesAreBoundedAcrossSelectAndResend() {
        let policy = Machine.Policy(maxAttempts: 3, validityMs: 100, maxResends: 1)
        let (results, machine) = Self.run(
            [
                .select("otp-sms", Self.codeA, at: 0), .select("otp-email", Self.codeB, at: 100),
                .resend(Self.codeA, at: 150), .select("otp-sms", Self.codeA, at: 160),
                .select("otp-sms", Self.codeA, at: 200), .resend(Self.codeA, at: 201),
                .submit(Self.codeB, at: 202),
            ], policy: policy)
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 100)),
                .delivery(.deliver(methodID: "otp-email", expiresAtMs: 200)),
                .delivery(.refused(.resendsExhausted)),
                // The code out is reported with no resend left, so the answer offers none.
                .delivery(.alreadySent(methodID: "otp-email", expiresAtMs: 200, attemptsLeft: 3, resendsLeft: 0)),
                .delivery(.refused(.codesExhausted(codes: 2))),
                .delivery(.refused(.codesExhausted(codes: 2))), .submit(.expiredCode),
            ])
        #expect(machine.challenge?.status == .pending && machine.challenge?.codeDigest == Self.codeB)
    }

    /// A code that reached no one puts the challenge back as it was before the code was issued: none for a first
    /// code, so the next select issues one; the replaced code, its tries and the resend, for a resend. A failure
    /// about a code that is no longer the one out changes nothing.
    @Test func aCodeThatReachedNoOneLeavesTheChallengeAsBefore() {
        var machine = Machine()
        _ = machine.select(methodID: "otp-sms", candidateDigest: Self.codeA, nowMs: 0)
        machine.deliveryFailed(digest: Self.codeB, previous: nil)
        #expect(machine.challenge?.codeDigest == Self.codeA)
        machine.deliveryFailed(digest: Self.codeA, previous: nil)
        #expect(machine.challenge == nil)
        #expect(
            machine.select(methodID: "otp-sms", candidateDigest: Self.codeB, nowMs: 1)
                == .deliver(methodID: "otp-sms", expiresAtMs: 1 + Self.tenMinutes))
        #expect(machine.submit(digest: Self.wrong, nowMs: 2) == .incorrectCode(attemptsLeft: 2))
        let before = machine.challenge
        _ = machine.resend(candidateDigest: Self.codeA, nowMs: 3)
        #expect(machine.challenge?.resendsLeft == 2)
        machine.deliveryFailed(digest: Self.codeA, previous: before)
        #expect(machine.challenge == before && machine.challenge?.resendsLeft == 3)
        #expect(machine.submit(digest: Self.codeB, nowMs: 4) == .success)
    }

    /// A resend whose delivery is uncertain keeps the codes it replaced acceptable (`earlier`) until their own
    /// expiry; a wrong code uses the current code's tries, and an earlier code that expired or was not pending is
    /// wrong.
    @Test func anEarlierCodeIsRightUntilItsOwnExpiry() {
        var machine = Machine()
        _ = machine.select(methodID: "otp-sms", candidateDigest: Self.codeA, nowMs: 0)
        let earlier = [machine.challenge].compactMap { $0 }
        _ = machine.resend(candidateDigest: Self.codeB, nowMs: 100)
        let locked = earlier.map { code in
            var code = code
            code.status = .locked
            return code
        }
        #expect(machine.submit(digest: Self.codeA, nowMs: 200, earlier: locked) == .incorrectCode(attemptsLeft: 2))
        #expect(machine.submit(digest: Self.wrong, nowMs: 300, earlier: earlier) == .incorrectCode(attemptsLeft: 1))
        var late = machine
        #expect(late.submit(digest: Self.codeA, nowMs: Self.tenMinutes, earlier: earlier) == .retriesExceeded)
        #expect(machine.submit(digest: Self.codeA, nowMs: 400, earlier: earlier) == .success)
        #expect(machine.challenge?.status == .verified)
    }

    @Test func selectingTheSameMethodAgainNeitherRegeneratesNorExtends() {
        let (results, machine) = Self.run([
            .select("otp-sms", Self.codeA, at: 0), .submit(Self.wrong, at: 1), .select("otp-sms", Self.codeB, at: 500),
            .submit(Self.codeB, at: 700), .submit(Self.codeA, at: 800),
        ])
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: Self.tenMinutes)),
                .submit(.incorrectCode(attemptsLeft: 2)),
                .delivery(
                    .alreadySent(methodID: "otp-sms", expiresAtMs: Self.tenMinutes, attemptsLeft: 2, resendsLeft: 3)),
                .submit(.incorrectCode(attemptsLeft: 1)), .submit(.success),
            ])
        #expect(machine.challenge?.methodID == "otp-sms")
    }

    /// A cardholder whose code went where they cannot read it picks another method: a new code by it, in place of
    /// the one out, from the resends; later resends go by the new method. With no resend left the code out stands.
    @Test func anotherMethodReplacesTheCodeOutFromTheResends() {
        let policy = Machine.Policy(maxAttempts: 3, validityMs: 1000, maxResends: 1)
        let (results, machine) = Self.run(
            [
                .select("otp-sms", Self.codeA, at: 0), .submit(Self.wrong, at: 1),
                .select("otp-email", Self.codeB, at: 10), .submit(Self.codeA, at: 20),
                .select("otp-sms", Self.wrong, at: 30), .submit(Self.codeB, at: 40),
            ], policy: policy)
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 1000)),
                .submit(.incorrectCode(attemptsLeft: 2)),
                // Fresh tries with the new code; the SMS code no longer works.
                .delivery(.deliver(methodID: "otp-email", expiresAtMs: 1010)),
                .submit(.incorrectCode(attemptsLeft: 2)),
                .delivery(.alreadySent(methodID: "otp-email", expiresAtMs: 1010, attemptsLeft: 2, resendsLeft: 0)),
                .submit(.success),
            ])
        #expect(machine.challenge?.methodID == "otp-email")
        var resent = Machine(policy: Machine.Policy())
        _ = resent.select(methodID: "otp-sms", candidateDigest: Self.codeA, nowMs: 0)
        _ = resent.select(methodID: "otp-email", candidateDigest: Self.codeB, nowMs: 1)
        #expect(
            resent.resend(candidateDigest: Self.wrong, nowMs: 2)
                == .deliver(methodID: "otp-email", expiresAtMs: 2 + Self.tenMinutes))
    }

    @Test func resendsAreBoundedAndEachGivesFreshTries() {
        let policy = Machine.Policy(maxAttempts: 2, validityMs: 100, maxResends: 2)
        let (results, _) = Self.run(
            [
                .select("otp-sms", Self.codeA, at: 0), .submit(Self.wrong, at: 1), .resend(Self.codeB, at: 10),
                .submit(Self.codeA, at: 11), .resend(Self.codeA, at: 20), .resend(Self.codeB, at: 30),
                .submit(Self.wrong, at: 31), .submit(Self.codeA, at: 32),
            ], policy: policy)
        #expect(
            results == [
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 100)), .submit(.incorrectCode(attemptsLeft: 1)),
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 110)), .submit(.incorrectCode(attemptsLeft: 1)),
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 120)), .delivery(.refused(.resendsExhausted)),
                .submit(.incorrectCode(attemptsLeft: 1)), .submit(.success),
            ])
    }

    @Test func nothingWorksBeforeSelectOrAfterSuccess() {
        let (results, _) = Self.run([
            .submit(Self.codeA, at: 0), .resend(Self.codeA, at: 0), .select("otp-sms", Self.codeA, at: 1),
            .submit(Self.codeA, at: 2), .submit(Self.codeA, at: 3), .resend(Self.codeB, at: 4),
            .select("otp-sms", Self.codeB, at: 5),
        ])
        #expect(
            results == [
                .submit(.refused(.noCodeSent)), .delivery(.refused(.noCodeSent)),
                .delivery(.deliver(methodID: "otp-sms", expiresAtMs: 1 + Self.tenMinutes)), .submit(.success),
                .submit(.refused(.alreadyVerified)), .delivery(.refused(.alreadyVerified)),
                .delivery(.refused(.alreadyVerified)),
            ])
    }

    @Test func digestsCompareByValueOnly() {
        #expect(Machine.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Machine.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Machine.constantTimeEqual([1, 2, 3], [1, 2]))
    }
}
