import Testing
import TokenetCard

@testable import TokenetTSP

/// The HOTP verifier and the activation-code check as event → action lists. Codes are stand-ins ("c<counter>") so
/// each test says exactly which counter a code belongs to.
@Suite struct AuthStateMachineTests {
    typealias Machine = HOTPVerifierStateMachine
    static let codeAt: @Sendable (UInt64) throws(CardError) -> String = { "c\($0)" }

    static func machine(counter: UInt64 = 0, failures: Int = 0, locked: Bool = false) -> Machine {
        Machine(state: .init(counter: counter, failures: failures, locked: locked))
    }

    @Test func theExpectedCodeIsAcceptedAndNeverAgain() throws {
        var machine = Self.machine(counter: 5)
        #expect(
            try machine.codeSubmitted("c5", codeAt: Self.codeAt)
                == [.persist(.init(counter: 6, failures: 0, locked: false)), .answer(.accepted)])
        #expect(
            try machine.codeSubmitted("c5", codeAt: Self.codeAt)
                == [.persist(.init(counter: 6, failures: 1, locked: false)), .answer(.incorrect(failuresLeft: 9))])
    }

    @Test func lookAheadWindowIsTenCodes() throws {
        var inside = Self.machine(counter: 0, failures: 3)
        #expect(
            try inside.codeSubmitted("c9", codeAt: Self.codeAt)
                == [.persist(.init(counter: 10, failures: 0, locked: false)), .answer(.accepted)])
        var outside = Self.machine(counter: 0)
        #expect(
            try outside.codeSubmitted("c10", codeAt: Self.codeAt)
                == [
                    .persist(.init(counter: 0, failures: 1, locked: false)),
                    .answer(.resyncRequired(failuresLeft: 9)),
                ])
    }

    @Test func codesBeyondTheResyncWindowAreJustIncorrect() throws {
        var machine = Self.machine(counter: 0)
        #expect(
            try machine.codeSubmitted("c100", codeAt: Self.codeAt)
                == [.persist(.init(counter: 0, failures: 1, locked: false)), .answer(.incorrect(failuresLeft: 9))])
    }

    @Test func resyncNeedsTwoConsecutiveCodesInsideTheLargerWindow() throws {
        var machine = Self.machine(counter: 0, failures: 2)
        #expect(
            try machine.resyncSubmitted(first: "c50", second: "c52", codeAt: Self.codeAt)
                == [.persist(.init(counter: 0, failures: 3, locked: false)), .answer(.incorrect(failuresLeft: 7))])
        #expect(
            try machine.resyncSubmitted(first: "c50", second: "c51", codeAt: Self.codeAt)
                == [.persist(.init(counter: 52, failures: 0, locked: false)), .answer(.accepted)])
        var far = Self.machine(counter: 0)
        #expect(
            try far.resyncSubmitted(first: "c99", second: "c100", codeAt: Self.codeAt)
                == [.persist(.init(counter: 0, failures: 1, locked: false)), .answer(.incorrect(failuresLeft: 9))])
    }

    @Test func tenFailuresLockUntilTheIssuerUnlocks() throws {
        var machine = Self.machine(counter: 0, failures: 9)
        #expect(
            try machine.codeSubmitted("wrong", codeAt: Self.codeAt)
                == [.persist(.init(counter: 0, failures: 10, locked: true)), .answer(.locked)])
        // Even the right code is refused while locked, and nothing is stored.
        #expect(try machine.codeSubmitted("c0", codeAt: Self.codeAt) == [.answer(.locked)])
        #expect(try machine.resyncSubmitted(first: "c0", second: "c1", codeAt: Self.codeAt) == [.answer(.locked)])
        #expect(machine.unlocked() == [.persist(.init(counter: 0, failures: 0, locked: false)), .answer(.accepted)])
        #expect(machine.unlocked() == [.answer(.notLocked)])
        #expect(
            try machine.codeSubmitted("c0", codeAt: Self.codeAt)
                == [.persist(.init(counter: 1, failures: 0, locked: false)), .answer(.accepted)])
    }

    @Test func worksWithRealHOTPCodes() throws {
        let hotp = try HOTP(secret: Array("12345678901234567890".utf8))
        var machine = Self.machine(counter: 0)
        // RFC 4226 counter 3 (969429) is within the window.
        let actions = try machine.codeSubmitted("969429") { counter throws(CardError) in try hotp.code(counter: counter)
        }
        #expect(actions == [.persist(.init(counter: 4, failures: 0, locked: false)), .answer(.accepted)])
    }

    // MARK: Activation codes

    typealias Activation = ActivationCodeStateMachine

    @Test func activationCodeIsSingleUse() {
        var machine = Activation(state: .init(status: .pending, attemptsLeft: 5, expiresAtMs: 1000))
        #expect(
            machine.codeSubmitted(matches: true, nowMs: 10)
                == [.persist(.init(status: .activated, attemptsLeft: 5, expiresAtMs: 1000)), .answer(.activate)])
        #expect(machine.codeSubmitted(matches: true, nowMs: 20) == [.answer(.alreadyUsed)])
    }

    @Test func activationCodeExpires() {
        var machine = Activation(state: .init(status: .pending, attemptsLeft: 5, expiresAtMs: 1000))
        #expect(machine.codeSubmitted(matches: true, nowMs: 1000) == [.answer(.expired)])
        var superseded = Activation(state: .init(status: .superseded, attemptsLeft: 5, expiresAtMs: 1000))
        #expect(superseded.codeSubmitted(matches: true, nowMs: 10) == [.answer(.expired)])
    }

    @Test func activationCodeHasBoundedAttempts() {
        var machine = Activation(state: .init(status: .pending, attemptsLeft: 2, expiresAtMs: 1000))
        #expect(
            machine.codeSubmitted(matches: false, nowMs: 10)
                == [
                    .persist(.init(status: .pending, attemptsLeft: 1, expiresAtMs: 1000)),
                    .answer(.incorrect(triesLeft: 1)),
                ])
        #expect(
            machine.codeSubmitted(matches: false, nowMs: 10)
                == [.persist(.init(status: .exhausted, attemptsLeft: 0, expiresAtMs: 1000)), .answer(.retriesExceeded)])
        #expect(machine.codeSubmitted(matches: true, nowMs: 10) == [.answer(.retriesExceeded)])
    }
}
