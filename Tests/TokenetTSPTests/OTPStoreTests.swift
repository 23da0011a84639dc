import Foundation
import Testing
import TokenetCard
import TokenetStorage
import TokenetTestSupport

@testable import TokenetTSP

/// One-time codes and call-centre activation on the TSP's SQLite storage: each step one transaction, the code
/// stored only as a digest, activation recorded in the token's audit trail.
@Suite struct OTPStoreTests {
    static let card = "DNITHE000000000000000054"
    static let policy = OTPStateMachine.Policy()
    static let t0: UInt64 = 1_795_000_000_000

    static func makeStore(path: String? = nil, state: TokenLifecycleStateMachine.State = .inactive) throws -> TSPStore {
        let database = try path.map { try Database.open(path: $0) } ?? Database.openInMemory()
        let store = try TSPStore(database: database, vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        _ = try database.execute(
            "INSERT INTO issuers (id, name, encryption_key_pem, updated_at_ms) VALUES ('bank-a', 'Bank A', 'pem', 0)")
        _ = try database.execute(
            """
            INSERT INTO tokens (digital_card_id, scheme, token_pan, token_last4, token_expiry, funding_pan, pan_last4,
                issuer_id, wallet_account_id, device_id, state, created_at_ms, updated_at_ms)
            VALUES (?, 'visa', x'00', '1234', '12/30', x'00', '0054', 'bank-a', 'account-1', 'device-1', ?, 0, 0)
            """, [card, state.rawValue])
        return store
    }

    func select(_ store: TSPStore, code: String, at: UInt64 = t0) throws -> OTPStateMachine.DeliveryAction {
        try store.selectOTP(
            digitalCardID: Self.card, methodID: "otp-sms", candidateCode: code, policy: Self.policy, nowMs: at
        ).action
    }

    func submit(_ store: TSPStore, code: String, at: UInt64 = t0 + 1) throws -> OTPStateMachine.SubmitResult {
        try store.submitOTP(
            digitalCardID: Self.card, code: code, policy: Self.policy, actor: "wallet:wallet-1", traceID: "trace-1",
            nowMs: at
        ).value
    }

    @Test func rightCodeActivatesTheTokenWithAnAuditedEvent() throws {
        let store = try Self.makeStore()
        #expect(try select(store, code: "123456") == .deliver(methodID: "otp-sms", expiresAtMs: Self.t0 + 600_000))
        #expect(try submit(store, code: "000000") == .incorrectCode(attemptsLeft: 2))
        #expect(try store.token(Self.card)?.state == .inactive)
        #expect(try submit(store, code: "123456") == .success)
        #expect(try store.token(Self.card)?.state == .active)
        let event = try #require(try store.events(of: Self.card).last)
        #expect(event.fromState == .inactive && event.toState == .active)
        #expect(event.actor == "wallet:wallet-1")
        #expect(event.reason == "ID&V one-time code verified (method otp-sms)")
        #expect(event.traceID == "trace-1")
        #expect(throws: TSPError.self) { try submit(store, code: "123456") }
    }

    @Test func theCodeIsStoredOnlyAsADigest() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "654321")
        let row = try #require(try store.database.queryOne("SELECT code_digest FROM otp_challenges"))
        let digest: [UInt8] = try row.get(0)
        #expect(digest == (try OTPCode.digest("654321", digitalCardID: Self.card, vault: store.vault)))
        #expect(digest != Array("654321".utf8))
        #expect(digest != (try OTPCode.digest("654321", digitalCardID: "DNITHE000000000000000099", vault: store.vault)))
        // Keyed: the unkeyed hash of the code (which reading the database and trying a million codes would find)
        // is not what is stored, nor is the digest another vault key makes.
        #expect(digest != (try OTPCode.legacyDigest("654321", digitalCardID: Self.card)))
        let other = try DataVault(key: [UInt8](repeating: 9, count: 32))
        #expect(digest != (try OTPCode.digest("654321", digitalCardID: Self.card, vault: other)))
    }

    /// A code issued before digests were keyed (stored unkeyed) is still checked for the rest of its life.
    @Test func aCodeStoredUnkeyedBeforeAnUpgradeStillWorks() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "246810")
        _ = try store.database.execute(
            "UPDATE otp_challenges SET code_digest = ?",
            [try OTPCode.legacyDigest("246810", digitalCardID: Self.card)])
        #expect(try submit(store, code: "135790") == .incorrectCode(attemptsLeft: 2))
        #expect(try submit(store, code: "246810") == .success)
    }

    @Test func selectingAgainKeepsTheFirstCode() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        #expect(
            try select(store, code: "222222", at: Self.t0 + 5000)
                == .alreadySent(
                    methodID: "otp-sms", expiresAtMs: Self.t0 + 600_000, attemptsLeft: 3,
                    resendsLeft: Self.policy.maxResends))
        #expect(try submit(store, code: "222222") == .incorrectCode(attemptsLeft: 2))
        #expect(try submit(store, code: "111111") == .success)
    }

    @Test func expiredExhaustedAndResent() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        #expect(try submit(store, code: "111111", at: Self.t0 + 600_000) == .expiredCode)
        let resent = try store.resendOTP(
            digitalCardID: Self.card, candidateCode: "333333", policy: Self.policy, nowMs: Self.t0 + 700_000)
        #expect(resent.action == .deliver(methodID: "otp-sms", expiresAtMs: Self.t0 + 1_300_000))
        for left in [2, 1] {
            #expect(try submit(store, code: "111111", at: Self.t0 + 700_001) == .incorrectCode(attemptsLeft: left))
        }
        #expect(try submit(store, code: "111111", at: Self.t0 + 700_002) == .retriesExceeded)
        #expect(try submit(store, code: "333333", at: Self.t0 + 700_003) == .retriesExceeded)
        #expect(try store.token(Self.card)?.state == .inactive)
    }

    @Test func stateSurvivesARestart() throws {
        // The database's -wal and -shm files sit beside it: a directory of its own takes them along.
        let path = try TestScratch.directory("otp").appendingPathComponent("otp.sqlite")
        do {
            let store = try Self.makeStore(path: path.path)
            _ = try select(store, code: "111111")
            #expect(try submit(store, code: "999999") == .incorrectCode(attemptsLeft: 2))
        }
        let reopened = try TSPStore(
            database: try Database.open(path: path.path), vault: try DataVault(key: [UInt8](repeating: 7, count: 32)))
        #expect(try submit(reopened, code: "999999") == .incorrectCode(attemptsLeft: 1))
        #expect(try submit(reopened, code: "111111") == .success)
    }

    /// A resend whose delivery a crash left without an outcome may have reached the cardholder, as one whose answer
    /// was lost may: at the next start both it and the code it replaced stay right (a wrong code uses the newer
    /// one's tries). It used to be withdrawn, and the SMS the issuer had sent was refused as wrong.
    @Test func aResendACrashInterruptedKeepsBothCodesAtStart() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        try store.otpDelivered(digitalCardID: Self.card, code: "111111")
        #expect(try store.keepUnconfirmedOTPCodes() == 0)
        let resent = try store.resendOTP(
            digitalCardID: Self.card, candidateCode: "333333", policy: Self.policy, nowMs: Self.t0 + 2)
        #expect(resent.action == .deliver(methodID: "otp-sms", expiresAtMs: Self.t0 + 600_002))
        // The crash: neither delivered nor failed was recorded.
        #expect(try store.keepUnconfirmedOTPCodes() == 1)
        #expect(try store.keepUnconfirmedOTPCodes() == 0)
        #expect(try submit(store, code: "999999", at: Self.t0 + 4) == .incorrectCode(attemptsLeft: 2))
        #expect(try submit(store, code: "111111", at: Self.t0 + 5) == .success)
        let row = try #require(try store.database.queryOne("SELECT resends_left, delivering FROM otp_challenges"))
        #expect(try row.int(0) == Self.policy.maxResends - 1 && row.int(1) == 0)
    }

    /// A first code a crash interrupted stays valid: the next select reports it out and sends none.
    @Test func aFirstCodeACrashInterruptedStaysValid() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        #expect(try store.keepUnconfirmedOTPCodes() == 1)
        guard case .alreadySent = try select(store, code: "222222", at: Self.t0 + 2) else {
            Issue.record("a second code was issued")
            return
        }
        #expect(try submit(store, code: "111111", at: Self.t0 + 4) == .success)
    }

    /// Codes whose delivery was uncertain stay right across later resends, lost or failed, until a delivery the
    /// issuer confirms; while a resend is on its way, only the newest code is taken, so wrong guesses then are no
    /// free tries at an older code.
    @Test func earlierCodesStayRightUntilADeliveryIsConfirmed() throws {
        @discardableResult
        func resend(_ code: String, at ms: UInt64) throws -> OTPStateMachine.Challenge? {
            try store.resendOTP(
                digitalCardID: Self.card, candidateCode: code, policy: Self.policy, nowMs: Self.t0 + ms
            ).previous
        }
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        try store.otpDelivered(digitalCardID: Self.card, code: "111111")
        try resend("222222", at: 1)
        try store.otpDeliveryUncertain(digitalCardID: Self.card, code: "222222")
        try resend("333333", at: 2)
        // On its way: the older codes are not taken.
        #expect(try submit(store, code: "111111", at: Self.t0 + 3) == .incorrectCode(attemptsLeft: 2))
        try store.otpDeliveryUncertain(digitalCardID: Self.card, code: "333333")
        let previous = try resend("444444", at: 4)
        try store.otpDeliveryFailed(
            digitalCardID: Self.card, code: "444444", previous: previous, policy: Self.policy, nowMs: Self.t0 + 5)
        // The first code, delivered for sure, is still right after two lost resends and a failed one.
        #expect(try submit(store, code: "111111", at: Self.t0 + 6) == .success)
    }

    /// A delivery the issuer confirms ends the earlier codes: the newest is the cardholder's.
    @Test func aConfirmedDeliveryEndsTheEarlierCodes() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "111111")
        try store.otpDelivered(digitalCardID: Self.card, code: "111111")
        _ = try store.resendOTP(
            digitalCardID: Self.card, candidateCode: "222222", policy: Self.policy, nowMs: Self.t0 + 1)
        try store.otpDeliveryUncertain(digitalCardID: Self.card, code: "222222")
        _ = try store.resendOTP(
            digitalCardID: Self.card, candidateCode: "333333", policy: Self.policy, nowMs: Self.t0 + 2)
        try store.otpDelivered(digitalCardID: Self.card, code: "333333")
        #expect(try submit(store, code: "111111", at: Self.t0 + 3) == .incorrectCode(attemptsLeft: 2))
        #expect(try submit(store, code: "222222", at: Self.t0 + 4) == .incorrectCode(attemptsLeft: 1))
        #expect(try submit(store, code: "333333", at: Self.t0 + 5) == .success)
    }

    @Test func onlyAnInactiveTokenTakesCodes() throws {
        for state in [TokenLifecycleStateMachine.State.deactivated, .active, .suspended] {
            let store = try Self.makeStore(state: state)
            let error = #expect(throws: TSPError.self) { try select(store, code: "111111") }
            #expect(error?.code == .failedPrecondition)
            #expect(error?.message.contains("\(state)") == true)
        }
        let store = try Self.makeStore()
        let error = #expect(throws: TSPError.self) {
            try store.selectOTP(
                digitalCardID: "DNITHE-unknown", methodID: "otp-sms", candidateCode: "1", policy: Self.policy,
                nowMs: Self.t0)
        }
        #expect(error?.code == .notFound)
    }

    @Test func callCentreActivation() throws {
        let store = try Self.makeStore()
        let token = try store.activateToken(
            digitalCardID: Self.card, actor: "issuer:bank-a", reason: "call centre verified the cardholder",
            traceID: "trace-2", nowMs: Self.t0
        ).value
        #expect(token.state == .active)
        let events = try store.events(of: Self.card)
        #expect(events.count == 1)
        #expect(events.last?.actor == "issuer:bank-a")
        #expect(events.last?.reason == "call centre verified the cardholder")
        let again = try store.activateToken(
            digitalCardID: Self.card, actor: "issuer:bank-a", reason: "again", traceID: "trace-3", nowMs: Self.t0 + 1
        ).value
        #expect(again.state == .active)
        #expect(try store.events(of: Self.card).count == 1)

        let deleted = try Self.makeStore(state: .deactivated)
        let error = #expect(throws: TSPError.self) {
            try deleted.activateToken(
                digitalCardID: Self.card, actor: "issuer:bank-a", reason: "r", traceID: "t", nowMs: Self.t0)
        }
        #expect(error?.code == .failedPrecondition)
        #expect(try deleted.token(Self.card)?.state == .deactivated)
    }

    @Test func generatedCodesAreSixDigits() {
        for _ in 0..<50 {
            let code = OTPCode.generate()
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))
            #expect(OTPCode.isWellFormed(code))
        }
    }

    @Test func aMalformedCodeIsRefusedAndUsesNoTry() throws {
        let store = try Self.makeStore()
        _ = try select(store, code: "123456")
        for malformed in ["abc", "12345", "1234567", "١٢٣٤٥٦"] {
            let error = #expect(throws: TSPError.self) { try submit(store, code: malformed) }
            #expect(error?.code == .invalidArgument)
        }
        #expect(try store.database.queryOne("SELECT attempts_left FROM otp_challenges")?.int(0) == 3)
        #expect(try submit(store, code: "000000") == .incorrectCode(attemptsLeft: 2))
    }
}
